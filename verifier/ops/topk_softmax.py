"""topk_softmax: MoE routing. Gating logits x[M,E] (E is the op's N) -> the k largest gates of each row, largest
first: values[M,k] float32 and indices[M,k] int32 (or int64, param ``index_dtype``), as vLLM's and SGLang's
``topk_softmax`` and their torch composition (softmax over all E in float32, ``torch.topk``, then optionally
``values / values.sum(-1)``).

params: k=8; renormalize=False (divide the k values by their sum); gate='softmax' (over all E, the max subtracted
first), 'sigmoid' (per element) or 'sqrtsoftplus' (sqrt(softplus(x)), DeepSeek-V4's, softplus(x) = x past 20);
index_dtype='int32' or 'int64'; scaling=1.0 (routed_scaling_factor: the values,
renormalized or not, times it); sorted=True (False: the k picks in any order, as torch.topk(sorted=False));
values_dtype='float32' ('bfloat16' / 'float16': weights written in the logits' dtype, vLLM's gpt-oss router);
zero_sum (a contract, renormalized kernels): picks whose gates sum to 0 give 'nan' (0 / 0) or 'zero' (a guarded
division).
Optional input ``bias[E]`` float32 (``params={"bias": True}``: DeepSeek-V3's e_score_correction_bias, vLLM's and
SGLang's biased top-k): the picks rank gate + bias, the values are the gates without it.

Judged tie-aware (verifier.judge.selection), not element by element: a pick is right when its exact gate is above the
exact k-th largest, or below it by no more than the two gates' derived error bounds (a kernel computing the gates in
float32 may order them either way there: exact ties, and gates less than its error apart); the picks are distinct,
in [0, E), largest first (in that same band); the values are compared with the reference at the kernel's own picks
(renormalized over them), within their derived budget. A NaN gate leaves its expert free (picked or not, anywhere);
the other picks are the top of the non-NaN gates (the softmax gate makes a whole row NaN: any distinct picks; grouped
rows holding a NaN: any distinct picks); the values at the picks must still be what the reference gives there; a
row whose k picks sum to 0 gives 0 / 0 = NaN when renormalized, as the torch composition does.
"""
from __future__ import annotations

import numpy as np

from verifier.errors import SpecError
from verifier.numerics.errmodel import gamma
from verifier.numerics.ulp import ulp
from verifier.ops import grouped_routing as _grouped
from verifier.ops.model import Contract, Invariant, Op, OpCase, Selection, Tensor
from verifier.ops.samplers import fit as _fit, holds_inf as _holds_inf, normal as _normal

GATES = ("softmax", "sigmoid", "sqrtsoftplus")
SOFTPLUS_THRESHOLD = 20.0  # softplus(x) = x past it (torch's default threshold, and the kernels')
INDEX_DTYPES = ("int32", "int64")
VALUES_DTYPES = ("float32", "bfloat16", "float16")  # values_dtype: float32, or the logits' 16-bit dtype


def gates(x, p):
    import torch

    gate = p["gate"]
    if gate not in GATES:
        raise SpecError(f"topk_softmax: gate={gate!r}", fix=f"use one of {', '.join(GATES)}")
    from verifier import dtypes as _dt

    if _dt.canonical(p.get("values_dtype") or "float32") not in VALUES_DTYPES:  # 'bf16' is 'bfloat16' too
        raise SpecError(f"topk_softmax: values_dtype={p.get('values_dtype')!r}",
                        fix=f"use one of {', '.join(VALUES_DTYPES)}")
    if gate == "sqrtsoftplus":  # DeepSeek-V4: sqrt(softplus(x)), softplus written as the kernels compute it
        return torch.sqrt(torch.where(x > SOFTPLUS_THRESHOLD, x, torch.log(1.0 + torch.exp(x))))
    return torch.softmax(x, -1) if gate == "softmax" else torch.sigmoid(x)


def renormalized(v, p):
    """v / sum(v) when renormalized; a sum of 0 gives 0 / 0 = NaN (the torch composition), or 0 where the kernel
    declares zero_sum='zero' (a guarded division: DeepSeek-V4's weight_sum > 0 ? weight_sum : 1, vLLM's
    clamp(min=1e-20))."""
    import torch

    if not p["renormalize"]:
        return v
    s = v.sum(-1, keepdim=True)
    return v / torch.where(s == 0, 1.0, s) if p.get("zero_sum") == "zero" else v / s


ZERO_SUM = Contract(("nan", "zero"), when=lambda p: bool(p.get("renormalize")))


def _k(x, p) -> int:
    k = p["k"]
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= x.shape[-1]:
        raise SpecError(f"topk_softmax: k={k!r} with E={x.shape[-1]} experts",
                        fix="give an int k with 1 <= k <= E (rows shorter than k are outside the op: no kernel is asked them)")
    return k


def scaling_of(p) -> float:
    """The declared routed_scaling_factor (1: none)."""
    s = p.get("scaling", 1.0)
    if isinstance(s, bool) or not isinstance(s, (int, float, np.floating)) or not np.isfinite(s):
        raise SpecError(f"topk_softmax: scaling={s!r} is not a finite number",
                        fix="declare the factor the kernel multiplies its weights by (routed_scaling_factor), or "
                            "leave it out (1.0)")
    return float(s)


def scaled(v, p):
    return v * scaling_of(p) if scaling_of(p) != 1.0 else v


def _choice(inputs, g):
    """What the picks rank: the gates, plus the correction bias (one per expert) when the kernel takes one."""
    return g if inputs.get("bias") is None else g + inputs["bias"]


def reference(inputs, p):
    """The torch composition in float64: gates over all E, topk of gate (+ bias) (the reference's own picks; with
    groups, over the experts of the topk_group best groups only), the gates there, renormalized, scaled."""
    import torch

    x = inputs["x"]
    g = gates(x, p)
    choice = _choice(inputs, g)
    kept = _grouped.kept_experts(choice, p)
    if kept is not None:
        choice = choice.masked_fill(~kept, _grouped.grouping(p)[3])
    indices = torch.topk(choice, _k(x, p), dim=-1).indices
    return {"values": scaled(renormalized(torch.gather(g, -1, indices), p), p), "indices": indices}


def scores(inputs, p):
    """What the picks rank: the gate of every expert (plus its bias)."""
    return _choice(inputs, gates(inputs["x"], p))


def at_picks(inputs, p):
    """The values at the kernel's picks (inputs['indices'], int64): the gates there, renormalized over them, scaled."""
    import torch

    return {"values": scaled(renormalized(torch.gather(gates(inputs["x"], p), -1, inputs["indices"]), p), p)}


# --------------------------------------------------------------------------- invariants

def _descent(inp, ys, p):
    """The largest step up along a row's values (0 when they never increase; NaN rows are nan-inf's). Values of
    picks ranked by gate + bias, or in any order (sorted=False), need not descend: 0."""
    v = ys["values"]
    if v.shape[1] < 2 or p.get("bias") or not p.get("sorted", True):
        return np.zeros(v.shape[0])
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(np.max(v[:, 1:] - v[:, :-1], axis=1), nan=0.0).clip(min=0.0)


def _unit_sum(inp, ys, p):
    """|sum(values) - scaling| of a renormalized row (0 when not renormalized)."""
    if not p["renormalize"]:
        return np.zeros(ys["values"].shape[0])
    return np.abs(ys["values"].sum(axis=1) - scaling_of(p))


def unit_sum_bound(inp, ys, p, c):
    """Each value is g_i / S (or g_i · (1/S)) of the gates the kernel picked, whatever their error: the ratios of
    the kernel's own gates sum to 1 exactly, so only the sum of k terms (gamma(k - 1)), the division (div units, or
    a reciprocal and a multiply: div + 1) and the float32 output rounding (out_ulps ULPs of each value, 2u per unit
    of value) remain: gamma(k + div + 1) + 2·out_ulps·2^-24, plus the float64 sum's own k·2^-53."""
    k, scaling = ys["values"].shape[1], abs(scaling_of(p))
    times = 1 if scaling != 1.0 else 0  # the scaling multiply rounds each value once more
    from verifier import dtypes as _dt

    u_values = _dt.unit_roundoff(p.get("values_dtype") or "float32")  # the values' dtype's
    return scaling * (gamma(k + c.intr.div + 1 + times, c.u) + 2 * c.out_ulps * u_values + k * 2.0 ** -53)


INVARIANTS = [
    Invariant("sorted", _descent, 0.0,
              "values are largest first: values[j + 1] <= values[j] (monotone rounding keeps the order; value = the "
              "largest step up)"),
    Invariant("unit_sum", _unit_sum, unit_sum_bound,
              "renormalized values sum to 1 (times scaling) up to the sum's and the division's rounding (value = "
              "|sum - scaling|)"),
]


# --------------------------------------------------------------------------- cases

def _duplicates(rng):
    """Logits drawn from four values (0, 0.5, 1, 1.5): every row has exact ties across the top-k boundary."""
    return lambda shape, dtype: _fit(rng.integers(0, 4, size=shape) * 0.5, dtype)


def _ladder(rng):
    """Each row a permutation of 1 + i·ulp(1) (i < E), adjacent representable values of the dtype: every pair of
    neighbours, the k-th and (k+1)-th largest included, is one ULP apart (float32: within the kernel's error band,
    either order is right; bf16 / f16: far outside it, the order is fixed)."""
    def fn(shape, dtype):
        M, E = shape
        steps = 1.0 + np.arange(E) * float(ulp(np.float64(1.0), dtype))
        return _fit(np.stack([rng.permutation(steps) for _ in range(M)]), dtype)
    return fn


def _neg_inf(rng):
    """Rows with most logits -inf: some keep fewer finite logits than k (the picks then include gates of 0),
    one row keeps a single finite logit (its gate is 1)."""
    def fn(shape, dtype):
        M, E = shape
        v = rng.standard_normal(shape)
        for i in range(M):
            keep = rng.permutation(E)[: max(1, (i * 3) % (E // 2 + 1))]
            row = np.full(E, -np.inf)
            row[keep] = v[i, keep]
            v[i] = row
        return _fit(v, dtype)
    return fn


def _constant(rng):
    """All-equal rows (one value per row): every choice of k distinct experts is right, gates are exactly 1/E."""
    return lambda shape, dtype: _fit(np.repeat(rng.standard_normal((shape[0], 1)), shape[1], axis=1), dtype)


def _wide(rng):
    """Logits randn·40: exp without the max subtracted overflows float32 (past 88.7)."""
    return lambda shape, dtype: _fit(40.0 * rng.standard_normal(shape), dtype)


def _nan_logits(rng):
    """Rows holding NaN logits where a per-element gate (sigmoid, sqrtsoftplus) keeps the other gates: one NaN in
    place of the row's largest logit, of its 8th largest (the default k's boundary), below the top; the two largest
    NaN; ten NaNs (more than the default k); a whole NaN row; a row without NaN. torch.topk ranks NaN largest, a
    kernel may drop it: either is right, the other picks must be the top of the rest."""
    def fn(shape, dtype):
        M, E = shape
        v = rng.standard_normal(shape)
        for i in range(M):
            order, kind = np.argsort(-v[i]), i % 7
            nan_at = {0: order[:1], 1: order[7:8], 2: order[-1:], 3: order[:2],
                      4: rng.permutation(E)[:10], 5: np.arange(E), 6: order[:0]}[kind]
            v[i, nan_at] = np.nan
        return _fit(v, dtype)
    return fn


def _ladder_ok(dt):
    return dt in ("float32", "float16", "bfloat16")


CASES = (
    OpCase("topk_exact_ties", "duplicate logits (four values per row): exact ties across the top-k boundary; any "
           "tie-break is right", 8, 64, _duplicates, quick=True),
    OpCase("topk_e60", "E = 60 experts (not a power of two): a lane-strided loop or a padded warp must not lose the "
           "last experts", 8, 60, _normal),
    OpCase("topk_e257", "E = 257 experts: one past a power of two", 4, 257, _normal),
    OpCase("topk_e256_deepseek", "E = 256 experts (DeepSeek-V3)", 4, 256, _normal),
    OpCase("topk_e8_k_equals_e", "E = 8 = k (the default): every expert picked, ordered", 8, 8, _normal),
    OpCase("topk_neg_inf_gates", "-inf logits: rows with fewer finite logits than k, one with a single finite "
           "logit", 8, 64, _neg_inf, dtype_ok=_holds_inf),
    OpCase("topk_all_equal", "all-equal rows: gates exactly 1/E, every k distinct experts right", 4, 64, _constant),
    OpCase("topk_one_ulp_ladder", "rows of adjacent representable values: the k-th and (k+1)-th largest one ULP "
           "apart", 4, 64, _ladder, dtype_ok=_ladder_ok),
    OpCase("topk_nan_logits", "NaN logits (at the top, at the k-th, below, more than k, a whole row): with a "
           "per-element gate the other picks are still the top of the rest", 7, 64, _nan_logits,
           dtype_ok=_holds_inf),
    OpCase("topk_wide_logits", "logits randn·40: exp without max subtraction overflows", 4, 64, _wide,
           dtype_ok=_holds_inf),
    # The same traps at E = 256: kernels built for a few expert counts only (DeepSeek-V3 / V4's 256, vLLM's dsv4_topk
    # takes 256 and 384) refuse every E above and would otherwise see only ordinary rows.
    OpCase("topk_e256_exact_ties", "E = 256, duplicate logits: exact ties across the top-k boundary", 4, 256,
           _duplicates),
    OpCase("topk_e256_neg_inf_gates", "E = 256, -inf logits: rows with fewer finite logits than k", 4, 256, _neg_inf,
           dtype_ok=_holds_inf),
    OpCase("topk_e256_one_ulp_ladder", "E = 256, rows of adjacent representable values", 2, 256, _ladder,
           dtype_ok=_ladder_ok),
)


def _bytes(M, N, dt, p):
    from verifier import dtypes as _dt

    k, isz = int(p["k"]), _dt.numpy_dtype(p["index_dtype"]).itemsize
    vsz = _dt.numpy_dtype(p.get("values_dtype") or "float32").itemsize
    return M * N * _dt.numpy_dtype(dt.input).itemsize + M * k * (vsz + isz) + (4 * N if p.get("bias") else 0)


OPDEF = Op(
    "topk_softmax", inputs={"x": "MxN", "bias": Tensor("N", "bias", dtype="float32", optional=True,
                                                          make=_grouped.bias_maker)},
    outputs={"values": Tensor("Mxk", dtype="values_dtype"), "indices": Tensor("Mxk", dtype="index_dtype")},
    params={"k": 8, "renormalize": False, "gate": "softmax", "index_dtype": "int32", "bias": None, "scaling": 1.0,
            "sorted": True, "values_dtype": "float32", "zero_sum": None,
            "n_group": 1, "topk_group": None, "group_score": None, "group_fill": "-inf"},
    contract_params={"zero_sum": ZERO_SUM},
    reference=reference,
    selection=Selection("indices", scores=scores, at=at_picks, ordered="sorted", groups=_grouped.grouping),
    supports=lambda N, p: f"E={N} experts, fewer than k={p['k']}" if isinstance(p["k"], int) and N < p["k"] else
    _grouped.refusal(N, p),  # k picks need k experts: shorter rows are outside the op, asked of no kernel
    out_dtypes=("float32",), float64=False,  # the values are float32 whatever the logits
    # gates computed in the logits' 16-bit dtype (torch's composition on bf16 router logits: vLLM's fused_topk_bias
    # fallback), written as float32: dtypes("bf16", "f32", acc="bf16")
    extra_tolerances=(("float32", "bfloat16", None), ("float32", "float16", None)),
    exp_family=True, invariants=INVARIANTS, cases=CASES + _grouped.CASES, bytes_moved=_bytes,
    description="MoE routing: softmax (or sigmoid) gates over E experts, the k largest with their indices, "
                "optionally renormalized over the k",
)
