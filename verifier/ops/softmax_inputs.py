"""The extra inputs and params of the softmax family (softmax, log_softmax, online_softmax_stats): what a kernel
fusing attention's score transforms declares (docs/specs.md, "Softmax with extra inputs").

    z = x·scale;  z = softcap·tanh(z / softcap) (softcap > 0);  z += -slope_i·|i + causal_offset - j| (alibi);
    z += mask;  z = -inf where causal and j > i + causal_offset;  then the op on the rows of z (with sinks[M], one
    more logit per row in the max and the denominator only).

Row r's query index is i = r mod q_len (q_len > 0: the (M, N) batch is (batch·heads·q_len, keys) flattened; q_len='N':
square blocks, r mod N) or r.
causal_offset 0 is PyTorch's ``is_causal`` (top-left: row i keeps columns 0..i); FlashAttention's bottom-right
alignment is causal_offset = N - q_len. ALiBi follows FlashAttention's ``alibi_slopes``: -slope·|i + offset - j|
(on causal rows, slope·(j - i - offset)). A row with no live logit (every column masked, no sink) gives NaN or
zeros as the kernel declares (``masked_rows``, a contract). Every default keeps the op as it was.

The numpy helpers here are shared by the references (references/_logits.py), the hand error model and the
invariants, so the semantics live in one place.
"""
from __future__ import annotations

import numpy as np

from verifier.ops.model import Contract, OpCase, Tensor
from verifier.ops.row_numbers import row_numbers



def _int_param(params: dict, name: str, allowed=()):
    v = params.get(name) or 0
    if v in allowed:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        from verifier.errors import SpecError

        raise SpecError(f"softmax: {name}={v!r} is not an int" + (f" nor one of {allowed}" if allowed else ""),
                        fix=f"declare {name} as an int" + (" or 'N' (square blocks of N queries)" if allowed else ""))
    return int(v)


def query_index(M: int, params: dict, N: int) -> np.ndarray:
    """Row r's query index plus causal_offset (the key column its diagonal lies on): r mod q_len, r mod N for
    q_len='N' (square blocks of N queries by N keys: Megatron's scaled_upper_triang_masked_softmax), or r (q_len
    0). One home for the three places that form logits (causal, ALiBi, references/_logits.py's mpmath)."""
    q = _int_param(params, "q_len", ("N",))
    q = N if q == "N" else q
    r = row_numbers(M)  # a large case's judged rows: their real numbers
    return (r % q if q > 0 else r) + _int_param(params, "causal_offset")


def causal_masked(M: int, N: int, params: dict) -> np.ndarray:
    """[M, N]: True where causal masks column j of row r (j > i + causal_offset)."""
    if not params.get("causal"):
        return np.zeros((M, N), dtype=bool)
    i = query_index(M, params, N)
    return np.arange(N)[None, :] > i[:, None]


def alibi_bias(slopes: np.ndarray, M: int, N: int, params: dict) -> np.ndarray:
    i = query_index(M, params, N)
    return -np.asarray(slopes, dtype=np.float64)[:, None] * np.abs(i[:, None] - np.arange(N)[None, :])


def make_mask(rng, x, params, policy):
    """An additive mask: 0 where kept, -inf where masked. Policies: None / 'random' (a quarter masked, the last
    column kept), 'lowest:V' (the same with the finite V, a dtype's lowest, instead of -inf), 'all_but_last' (every
    column but the last masked), 'full_rows' (every other row, or a broadcast mask's only row, fully masked),
    'hides_max' (random, and each row's largest logit masked)."""
    M, N = x.shape
    shape = (N,) if params.get("mask") == "N" else (M, N)
    keep = rng.random(shape) >= 0.25
    keep[..., -1] = True
    if policy == "all_but_last":
        keep[...] = False
        keep[..., -1] = True
    elif policy == "full_rows":
        if len(shape) == 2:
            keep[::2] = False
        else:
            keep[...] = False
    elif policy == "hides_max":  # the row's largest logit masked (a broadcast mask: row 0's, where _max_at puts all)
        top = np.argmax(np.where(np.isnan(x), -np.inf, x), axis=1)
        keep[..., -1] = True
        if len(shape) == 2:
            keep[np.arange(M), top] = False
        else:
            keep[top[0]] = False
    fill = float(policy.split(":")[1]) if policy and policy.startswith("lowest:") else -np.inf
    return np.where(keep, 0.0, fill)


def make_slopes(rng, x, params, policy):
    """ALiBi slopes per row: 2^(-8(h+1)/H) for H = 8 heads, as the ALiBi paper's geometric sequence."""
    M = x.shape[0]
    return 2.0 ** (-(np.arange(M) % 8 + 1))


def make_sinks(rng, x, params, policy):
    """One sink logit per row, N(0, 1) (gpt-oss learns one per head)."""
    return rng.standard_normal(x.shape[0])


# The params and optional inputs every op of the family takes. masked_rows: 'nan' (PyTorch: softmax of a row of
# -inf is NaN), 'zeros' (FlashAttention: a row with nothing to attend to is 0) or 'uniform' (Megatron's
# masked_fill(mask, -10000.0): a finite fill replaces every masked logit, so such a row is the op of a row of equal
# logits, softmax 1/N), a contract the kernel declares.
PARAMS = {"scale": 1.0, "softcap": 0.0, "causal": False, "causal_offset": 0, "q_len": 0,
          "mask": None, "alibi_slopes": None, "sinks": None, "mask_mode": "add", "logits_dtype": None,
          "mask_dtype": None}
# mask_dtype: None (the mask in the input dtype) or the dtype the kernel reads its mask in, whatever x's: ggml's
# soft_max_f32 takes f32 logits with an f16 or f32 mask (llama.cpp's KQ mask)
# logits_dtype: None (z formed in the kernel's accumulation dtype, as fused kernels do) or 'input' (each stage of z,
# x·scale, the softcap, + bias, + mask, stored in the input dtype before the softmax: PyTorch's unfused attention,
# HF's eager_attention_forward, whose bf16 scores are scaled and masked in bf16, then softmaxed in float32)
LOGITS_DTYPES = (None, "input")
# mask_mode: 'add' (z + mask: PyTorch's float attn_mask, NaN + -inf is NaN) or 'fill' (where the mask is nonzero
# it replaces the logit: a boolean mask applied as masked_fill(mask, value), Megatron's and most fused kernels',
# which never read a masked logit, so a NaN there is dropped)
MASK_MODES = ("add", "fill")


def mask_mode(params: dict) -> str:
    mode = params.get("mask_mode") or "add"
    if mode not in MASK_MODES:
        from verifier.errors import SpecError

        raise SpecError(f"softmax: mask_mode={mode!r}", fix=f"use one of {', '.join(map(repr, MASK_MODES))}")
    return mode


def apply_mask(z, mk, params: dict):
    """z with the mask ``mk`` (broadcast to z's shape) applied as ``mask_mode`` says."""
    return np.where(mk != 0, mk, z) if mask_mode(params) == "fill" else z + mk
OPTIONAL = {
    "mask": Tensor("MxN", dtype="mask_dtype", make=make_mask, optional=True),
    "alibi_slopes": Tensor("M", dtype="float32", make=make_slopes, optional=True),
    "sinks": Tensor("M", dtype="float32", make=make_sinks, optional=True),
}


def masks(params: dict) -> bool:
    """The kernel can mask a whole row (a mask input, or causal): its masked_rows contract is open."""
    return bool(params.get("mask")) or bool(params.get("causal"))


MASKED_ROWS = Contract(("nan", "zeros", "uniform"), when=masks)


def fill_dead(z: np.ndarray, sinks, params: dict, mask=None) -> np.ndarray:
    """z where the kernel declares masked_rows='uniform' (a finite fill, Megatron's -10000.0, replaces each logit
    the mask masks): in the rows with no live logit (every z -inf, no finite sink) the masked logits become 0, one
    equal value (a fully masked row is then 1/N; a row whose unmasked logits are all -inf puts its mass on the masked
    ones; with nothing masked by the mask it stays dead: NaN). Else z. ``mask``: the mask broadcast to z's shape, or
    None. One home for the three places that form logits (here, references/_logits.py's float64 and mpmath)."""
    if params.get("masked_rows") != "uniform" or mask is None:
        return z
    dead = np.all(np.isneginf(z), axis=1)
    if sinks is not None:
        dead &= ~np.isfinite(np.asarray(sinks, dtype=np.float64))
    return np.where(dead[:, None] & (np.asarray(mask) != 0), 0.0, z) if dead.any() else z


def logits(xs: dict, params: dict, x=None) -> np.ndarray:
    """The float64 logits z of the inputs ``xs`` (float64 arrays), sinks left out."""
    x = np.asarray(xs["x"] if x is None else x, dtype=np.float64)
    M, N = x.shape
    scale, cap = float(params.get("scale", 1.0) or 1.0), float(params.get("softcap") or 0.0)
    with np.errstate(all="ignore"):
        z = x * scale
        if cap > 0:
            z = cap * np.tanh(z / cap)
        if xs.get("alibi_slopes") is not None:
            z = z + alibi_bias(xs["alibi_slopes"], M, N, params)
        mk = None if xs.get("mask") is None else np.broadcast_to(np.asarray(xs["mask"], dtype=np.float64), (M, N))
        if mk is not None:
            z = apply_mask(z, mk, params)
    return fill_dead(np.where(causal_masked(M, N, params), -np.inf, z), xs.get("sinks"), params, mk)


def _stage_u(params: dict, c) -> float:
    """The unit roundoff each stage of z is rounded with: the accumulation dtype's, or with logits_dtype='input' the
    input dtype's where that is coarser (c.inp: the kernel's input dtype)."""
    how = params.get("logits_dtype")
    if how not in LOGITS_DTYPES:
        from verifier.errors import SpecError

        raise SpecError(f"softmax: logits_dtype={how!r}", fix="use None (the logits formed in the accumulation "
                        "dtype) or 'input' (x·scale, + mask, ... stored in the input dtype before the softmax)")
    if how == "input":
        from verifier import dtypes as _dt

        return max(c.u, _dt.unit_roundoff(c.inp) if _dt.is_float(c.inp) else 0.0)
    return c.u


def logit_error(xs: dict, params: dict, c) -> np.ndarray:
    """[M, N] absolute bound on the kernel's error in z before the softmax (0 with every default): x·scale rounds
    once (u|x·scale|); softcap divides (u), takes tanh (absolute (exp + div + 2)·u on a value <= 1, whether tanhf
    or 1 - 2/(exp(2t) + 1)) and multiplies back (u), slope <= 1 passing the earlier error through; ALiBi's
    slope·distance rounds twice (2u|bias|); each addition rounds (u|z|). Masked (-inf) entries carry none."""
    x = np.asarray(xs["x"], dtype=np.float64)
    M, N = x.shape
    scale, cap = float(params.get("scale", 1.0) or 1.0), float(params.get("softcap") or 0.0)
    u = _stage_u(params, c)  # each stage's result rounds to the accumulation dtype, or to the input dtype
    err = np.zeros_like(x)
    with np.errstate(all="ignore"):
        t = np.abs(x * scale)
        if scale != 1.0:
            err = err + u * t
        if cap > 0:
            err = err + c.u * cap * (c.intr.exp + c.intr.div + 2) + 2 * u * np.minimum(t, cap)
            t = np.minimum(t, cap)
        if xs.get("alibi_slopes") is not None:
            b = np.abs(alibi_bias(xs["alibi_slopes"], M, N, params))
            t = t + b
            err = err + 2 * u * b + u * t
        if xs.get("mask") is not None:
            mk = np.broadcast_to(np.asarray(xs["mask"], dtype=np.float64), (M, N))
            if mask_mode(params) == "fill":  # a masked logit is the mask's value, exactly
                err = np.where(mk != 0, 0.0, err)
            else:
                added = np.isfinite(mk) & (mk != 0)  # x + 0 and x + -inf are exact
                t = t + np.where(added, np.abs(mk), 0.0)
                err = err + np.where(added, u * t, 0.0)
    # masked (-inf) entries carry none, nor do the rows masked_rows='uniform' fills (their logits are exact 0s)
    return np.where(np.isfinite(logits(xs, {**params, "masked_rows": None})), err, 0.0)


def with_sink(z: np.ndarray, xs: dict) -> np.ndarray:
    """z with the sink logit as one more column (the max and the sum see it), or z."""
    if xs.get("sinks") is None:
        return z
    return np.concatenate([z, np.asarray(xs["sinks"], dtype=np.float64)[:, None]], axis=1)


def fully_masked(z: np.ndarray, xs: dict) -> np.ndarray:
    """[M]: rows with no live logit (every z -inf, no sink)."""
    dead = np.all(np.isneginf(z), axis=1)
    if xs.get("sinks") is not None:
        dead &= ~np.isfinite(np.asarray(xs["sinks"], dtype=np.float64))
    return dead


# --------------------------------------------------------------------------- adversarial cases

def _randn(scale: float = 1.0):
    def factory(rng):
        def draw(shape, dtype):
            from verifier.numerics.ulp import round_to

            with np.errstate(over="ignore"):
                return round_to(scale * rng.standard_normal(shape), dtype).astype(np.float64)
        return draw
    return factory


def _max_at(lift: float):
    """randn rows with one column (the same in every row) raised by ``lift``: the row's max, which the mask
    'hides_max' then masks; the live logits lie ``lift`` below it."""
    def factory(rng):
        def draw(shape, dtype):
            from verifier.numerics.ulp import round_to

            v = rng.standard_normal(shape)
            v[:, rng.integers(shape[1] - 1)] += lift
            return round_to(v, dtype).astype(np.float64)
        return draw
    return factory


def _only(dtype: str):
    return lambda dt: dt == dtype


CASES = (
    OpCase("sm_causal_triangle", "M = N rows: with causal, row 0 keeps one column and the last row all of them "
           "(a mask off by one row or column, or a triangle cut short)", 64, 64, _randn(), fixed_m=True),
    OpCase("sm_huge_logits", "logits of randn·1000: far past a softcap of 30-50 (cap·tanh(x/cap) saturates; a "
           "softcap applied after the max, or exp of the raw logits, is wrong or overflows) and a large "
           "|x·scale - max|", 4, 256, _randn(1000.0), dtype_ok=lambda dt: dt in ("float32", "bfloat16",
                                                                                     "float16")),
    OpCase("sm_mask_all_but_last", "a mask keeping only the last column of every row: y is one-hot there (a "
           "mask read off by one column, or a loop stopping at N - 1, misses it)", 4, 1000, _randn(),
           policy="all_but_last", needs=("mask",)),
    OpCase("sm_mask_hides_max", "each row's largest logit (200 above the rest) masked: a max taken before the mask "
           "(x - max(x) + mask, DeepSpeed's Triton masked softmax) underflows every live exp and gives 0/0 = NaN", 4,
           256, _max_at(200.0), policy="hides_max", needs=("mask",)),
    OpCase("sm_mask_full_rows", "every other row fully masked (-inf): the rows give NaN or zeros as the kernel "
           "declares (masked_rows); an undeclared kernel is told which it does", 8, 256, _randn(),
           policy="full_rows", needs=("mask",)),
    *(OpCase(f"sm_mask_lowest_{tag}", f"a mask of {dt}'s lowest finite value ({v:.6g}) instead of -inf: x + mask "
             "must stay finite (no overflow to -inf, no NaN from -inf - -inf) and the masked columns 0", 4, 1000,
             _randn(), policy=f"lowest:{v!r}", dtype_ok=_only(dt), needs=("mask",))
      for tag, dt, v in (("f32", "float32", -3.4028234663852886e38), ("bf16", "bfloat16", -3.3895313892515355e38),
                         ("f16", "float16", -65504.0))),
)
