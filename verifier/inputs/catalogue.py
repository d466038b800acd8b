"""Adversarial inputs: named samplers, the case catalogue, and Hypothesis strategies for shapes.

Samplers follow JAX's ``public_test_util`` style: ``rand_x(rng, ...)`` takes an explicit
``numpy.random.Generator`` and returns ``fn(shape, dtype) -> float64 array``. The values are
already representable in ``dtype`` (rounded to nearest-even where needed), so ``Case.make``'s cast
into the input dtype changes nothing and a sampler's promise ("strictly increasing", "subnormal",
"past exp overflow") holds for what the kernel reads. Integer dtypes get integers of the full range.

A :class:`Case` is one named adversarial input: ``case.make(rng, dtypes, op, params)`` returns every
input tensor of ``op`` (x, w, b, residual, labels; see ``verifier.ops``) in ``dtypes.input`` (integer
roles in their own dtype). An op may add cases of its own (``OpDef.cases``). Weights are
random around 1 (w ~ 1 + 0.1·N(0,1), b ~ 0.1·N(0,1)), never all ones, so a kernel ignoring w fails.

A case also has a memory layout (``Case.layout``, verifier.inputs.layouts): the strided and unaligned cases
lay ordinary values out as callers' views do; the large family (more than 2^31 elements and its siblings, GPU only)
lives in verifier.inputs.large_family, which verifier.inputs.cases appends at the levels of the level table's
``large_index`` column. The Hypothesis strategies live in verifier.inputs.strategies (re-exported here).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.constants import DEFAULT_LEVEL
from verifier.declare.kernels import Dtypes
from verifier.errors import UsageError
from verifier.inputs import layouts as _lay
from verifier.inputs.strategies import cols, eps_values, rows, shapes  # noqa: F401 (re-exported)
from verifier.numerics.ulp import round_to, ulp
from verifier.ops import OPS, get_op
from verifier.results.levels import TABLE as LEVELS  # the one run-level table; here: which cases, at which M

__all__ = [
    "Case", "catalogue", "maker", "LEVELS", "exp_overflow_threshold",
    "rand_normal", "rand_mean_gg_std", "rand_ulp_bumps", "rand_partial_neg_inf_mask", "rand_one_neg_inf",
    "rand_fully_masked", "rand_past_exp_overflow", "rand_constant_rows", "rand_increasing_rows",
    "rand_zero_rows", "rand_subnormals", "rand_signed_zeros", "rand_some_nan", "sparse_maker",
    "shapes", "rows", "cols", "eps_values",
]

Sampler = Callable[[tuple, str], np.ndarray]


# ---------------------------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------------------------


def _is_int(dtype: str) -> bool:
    return not _dt.is_float(dtype)


def _fit(v: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded into ``dtype`` (exactly representable afterwards)."""
    if _is_int(dtype):
        info = np.iinfo(_dt.numpy_dtype(dtype))
        return np.clip(np.rint(v), info.min, info.max).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to(v, dtype).astype(np.float64)


def _int_full_range(rng, shape, dtype) -> np.ndarray:
    info = np.iinfo(_dt.numpy_dtype(dtype))
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(np.float64)


def _need_inf(dtype: str, who: str) -> None:
    if not _dt.is_float(dtype) or dtype == "float8_e4m3fn":
        raise UsageError(f"{who}: {dtype} has no -inf to mask with", fix="use a dtype with infinities "
                         "(float32, float16, bfloat16, float8_e5m2) or leave masking cases out")


def _some_rows(rng, M, frac) -> np.ndarray:
    """A boolean row mask with about ``frac`` of the rows set, at least one, and (when M > 1) at
    least one unset, so every batch mixes special and ordinary rows."""
    pick = rng.random(M) < frac
    pick[rng.integers(M)] = True
    if M > 1 and pick.all():
        pick[rng.integers(M)] = False
    return pick


def rand_normal(rng: np.random.Generator, scale: float = 1.0) -> Sampler:
    """N(0, scale²) values; integers: uniform over the dtype's full range."""
    def fn(shape, dtype):
        if _is_int(dtype):
            return _int_full_range(rng, shape, dtype)
        return _fit(scale * rng.standard_normal(shape), dtype)
    return fn


def rand_mean_gg_std(rng: np.random.Generator, center: float = 101.0, halfwidth: float = 1.0) -> Sampler:
    """Uniform on [center - halfwidth, center + halfwidth]: mean >> std (cancellation in
    E[x²] - E[x]², exp overflow without max subtraction). Defaults: [100, 102]."""
    def fn(shape, dtype):
        return _fit(rng.uniform(center - halfwidth, center + halfwidth, shape), dtype)
    return fn


def rand_ulp_bumps(rng: np.random.Generator, center: float = 1000.0) -> Sampler:
    """Cancelling rows of values exactly representable in the dtype, a few of its ULPs apart, by row index mod 4:
    0. c (1000, at most a quarter of the dtype's max) with one element c + k·ulp(c), k in 1..3 (bf16: 1004..1012);
    1. c with two such elements; 2. c + j·ulp(c), j in 0..3 (up to 0.05 / ulp(c): var above eps = 1e-5 in f32):
    a large offset with a tiny spread; 3. row 0's kind, negated. E[x²] - E[x]² loses the whole variance."""
    def fn(shape, dtype):
        c = float(_fit(np.float64(min(center, float(_dt.finfo(dtype).max) / 4)), dtype))
        step = float(ulp(c, dtype))
        rows = np.full(shape, c, dtype=np.float64).reshape(-1, shape[-1])
        N = rows.shape[1]
        for i, row in enumerate(rows):
            if i % 4 == 2:
                row += step * rng.integers(0, max(4, round(0.05 / step)), N)
                continue
            bumps = rng.choice(N, size=min(2 if i % 4 == 1 else 1, N), replace=False)
            row[bumps] += step * rng.integers(1, 4, len(bumps))
            row *= -1.0 if i % 4 == 3 else 1.0
        return _fit(rows.reshape(shape), dtype)  # steps past a binade's end (fp8) onto the coarser grid
    return fn


def rand_partial_neg_inf_mask(rng: np.random.Generator, frac: float = 0.5) -> Sampler:
    """N(0, 1) with about ``frac`` of each row set to -inf (an attention mask); every row keeps at
    least one finite value."""
    def fn(shape, dtype):
        _need_inf(dtype, "rand_partial_neg_inf_mask")
        v = _fit(rng.standard_normal(shape), dtype)
        mask = rng.random(shape) < frac
        keep = rng.integers(shape[-1], size=shape[:-1])
        np.put_along_axis(mask, keep[..., None], False, axis=-1)
        return np.where(mask, -np.inf, v)
    return fn


def rand_masked_prefix(rng: np.random.Generator, frac: float = 0.825) -> Sampler:
    """N(0, 1) rows whose first ``frac`` of elements are -inf (left padding, a causal prefix): over a row longer than
    one tile, an online max that starts at -inf meets a tile holding only -inf, where exp(m - m_new) = exp(-inf -
    -inf) is NaN unless guarded (aiter's online softmax turned such rows all NaN)."""
    def fn(shape, dtype):
        _need_inf(dtype, "rand_masked_prefix")
        v = _fit(rng.standard_normal(shape), dtype)
        v[..., :int(shape[-1] * frac)] = -np.inf
        return v
    return fn


def rand_one_neg_inf(rng: np.random.Generator) -> Sampler:
    """N(0, 1) with exactly one -inf per row."""
    def fn(shape, dtype):
        _need_inf(dtype, "rand_one_neg_inf")
        v = _fit(rng.standard_normal(shape), dtype)
        pos = rng.integers(shape[-1], size=shape[:-1])
        np.put_along_axis(v, pos[..., None], -np.inf, axis=-1)
        return v
    return fn


def rand_fully_masked(rng: np.random.Generator, frac: float = 0.5) -> Sampler:
    """N(0, 1) rows, some (at least one, not all when M > 1) entirely -inf: softmax of such a row is
    NaN, and a -inf identity in a max merge must not turn other rows into NaN."""
    def fn(shape, dtype):
        _need_inf(dtype, "rand_fully_masked")
        v = _fit(rng.standard_normal(shape), dtype)
        v[_some_rows(rng, shape[0], frac)] = -np.inf
        return v
    return fn


def exp_overflow_threshold(dtype) -> float:
    """ln(max finite of ``dtype``): exp overflows past it when computed in ``dtype``
    (88.72 for float32/bfloat16, 11.09 for float16 since exp(11.1) > 65504)."""
    return math.log(float(_dt.finfo(dtype).max))


def rand_past_exp_overflow(rng: np.random.Generator) -> Sampler:
    """Uniform values from just past exp_overflow_threshold(dtype) (89 for float32/bfloat16, 11.1
    for float16) up to max(threshold, 89) + 10: past the overflow of exp in the input dtype and
    (for narrow dtypes) in float32 too, so a kernel that skips the max subtraction overflows
    whether it computes exp in the input dtype or in float32."""
    def fn(shape, dtype):
        thr = exp_overflow_threshold(dtype)
        lo = math.ceil(thr) if thr > 20 else math.ceil(thr * 10) / 10
        hi = min(max(lo, 89.0) + 10.0, float(_dt.finfo(dtype).max))
        v = _fit(rng.uniform(lo, hi, shape), dtype)
        low = v < lo  # rounding fell below: take the next representable value up
        return np.where(low, v + ulp(v, dtype), v)
    return fn


def rand_constant_rows(rng: np.random.Generator) -> Sampler:
    """Each row one random value repeated (variance exactly 0, softmax exactly uniform)."""
    def fn(shape, dtype):
        c = (_int_full_range(rng, shape[:-1], dtype) if _is_int(dtype)
             else _fit(rng.standard_normal(shape[:-1]), dtype))
        return np.broadcast_to(c[..., None], shape).copy()
    return fn


def _ordinal(v: np.ndarray, dtype: str) -> np.ndarray:
    """Sign-magnitude rank of float values in ``dtype`` (adjacent representable values differ by 1)."""
    a = np.asarray(round_to(v, dtype))
    nbits = 8 * a.dtype.itemsize
    bits = a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]).astype(np.uint64)
    mag = (bits & np.uint64((1 << (nbits - 1)) - 1)).astype(np.int64)
    return np.where(bits >> np.uint64(nbits - 1), -mag, mag)


def _from_ordinal(o: np.ndarray, dtype: str) -> np.ndarray:
    npd = _dt.numpy_dtype(dtype)
    nbits = 8 * npd.itemsize
    bits = np.where(o < 0, (np.uint64(1) << np.uint64(nbits - 1)) | np.abs(o).astype(np.uint64),
                    o.astype(np.uint64))
    u = bits.astype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[npd.itemsize])
    with np.errstate(invalid="ignore"):
        return u.view(npd).astype(np.float64)


def rand_increasing_rows(rng: np.random.Generator, spread: float = 4.0) -> Sampler:
    """Rows strictly increasing *in the dtype* (no ties after rounding), drawn from about
    [-spread, spread]: an online softmax must rescale at every element."""
    def fn(shape, dtype):
        M, N = shape
        if _is_int(dtype):
            info = np.iinfo(_dt.numpy_dtype(dtype))
            if N > info.max - info.min + 1:
                raise UsageError(f"rand_increasing_rows: {N} strictly increasing {dtype} values do not exist",
                                 fix=f"use N <= {info.max - info.min + 1}")
            return np.stack([np.sort(rng.choice(np.arange(info.min, info.max + 1), N, replace=False))
                             for _ in range(M)]).astype(np.float64)
        o = _ordinal(np.sort(rng.uniform(-spread, spread, shape), axis=1), dtype)
        k = np.arange(N)
        o = np.maximum.accumulate(o - k, axis=1) + k  # bump ties: o_k >= o_{k-1} + 1
        top = int(_ordinal(np.array([float(_dt.finfo(dtype).max)]), dtype)[0])
        if o.max() > top:
            raise UsageError(f"rand_increasing_rows: {N} strictly increasing {dtype} values do not fit "
                             f"above -{spread}", fix="use a smaller N or a wider dtype")
        return _from_ordinal(o, dtype)
    return fn


def rand_zero_rows(rng: np.random.Generator, frac: float = 0.5) -> Sampler:
    """N(0, 1) rows, some (at least one) entirely +0: rms/variance 0, so only eps keeps 1/rms finite."""
    def fn(shape, dtype):
        v = rand_normal(rng)(shape, dtype)
        v[_some_rows(rng, shape[0], frac)] = 0.0
        return v
    return fn


def rand_subnormals(rng: np.random.Generator) -> Sampler:
    """Subnormal values of the dtype, random signs: k·smallest_subnormal, 1 <= k < 2**nmant."""
    def fn(shape, dtype):
        fi = _dt.finfo(dtype)
        k = rng.integers(1, 2 ** int(fi.nmant), size=shape).astype(np.float64)
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return sign * k * float(fi.smallest_subnormal)
    return fn


def rand_signed_zeros(rng: np.random.Generator) -> Sampler:
    """Only +0 and -0, random signs, every row of length >= 2 holding both."""
    def fn(shape, dtype):
        v = np.where(rng.random(shape) < 0.5, -0.0, 0.0)
        if shape[-1] >= 2:
            v[..., 0], v[..., 1] = 0.0, -0.0
        return v
    return fn


def rand_some_nan(rng: np.random.Generator, frac: float = 0.5) -> Sampler:
    """N(0, 1) rows; some rows (at least one, not all when M > 1) hold one NaN at a random place."""
    def fn(shape, dtype):
        v = _fit(rng.standard_normal(shape), dtype)
        rows = np.flatnonzero(_some_rows(rng, shape[0], frac))
        v[rows, rng.integers(shape[-1], size=len(rows))] = np.nan
        return v
    return fn


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


def _cast(v: np.ndarray, dtype: str) -> np.ndarray:
    if _is_int(dtype):
        return v.astype(_dt.numpy_dtype(dtype))
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to(v, dtype) if dtype != "float64" else v.astype(np.float64)


def _as_dtypes(dtypes) -> Dtypes:
    if isinstance(dtypes, Dtypes):
        return dtypes
    from verifier.declare.kernels import dtypes as mk

    return mk(dtypes)


@dataclass(frozen=True)
class Case:
    """One adversarial input. ``make(rng, dtypes, op, params)`` -> {tensor: array in dtypes.input}
    holding every input of ``op``. ``ops``: the ops it applies to (None: all). ``dtype_ok``: which
    input dtypes can hold its values (None: all). ``layout``: how the harness lays the tensors out."""

    name: str
    exposes: str
    M: int
    N: int
    make: Callable = field(repr=False, compare=False)
    ops: Optional[tuple] = None
    dtype_ok: Optional[Callable[[str], bool]] = field(default=None, repr=False, compare=False)
    layout: _lay.Layout = _lay.DEFAULT

    def applies_to(self, op: str, dtypes=None) -> bool:
        if self.ops is not None and op not in self.ops:
            return False
        return dtypes is None or self.dtype_ok is None or bool(self.dtype_ok(_as_dtypes(dtypes).input))


def maker(M: int, N: int, sampler_factory: Callable[[np.random.Generator], Sampler], policy: str | None = None):
    """``make(rng, dtypes, op, params) -> {tensor: array}``: every input of ``op`` at M x N. Data
    roles (x, residual) come from ``sampler_factory`` in the input dtype; weights and biases as the
    module docstring says; integer roles (labels) from their role's maker, which sees the drawn x and
    ``policy`` (the case's label placement, None: random)."""
    def make(rng: np.random.Generator, dtypes, op: str, params: dict | None = None) -> dict:
        dt = _as_dtypes(dtypes).input
        return _inputs(rng, dtypes, op, params, M, N, lambda t, dtype: _cast(sampler_factory(rng)((M, N), dt), dtype),
                       lambda out: np.asarray(out["x"], dtype=np.float64), policy)
    return make


def _inputs(rng, dtypes, op: str, params, M: int, N: int, data: Callable, label_rows: Callable, policy,
            made_rows: Callable | None = None) -> dict:
    """Every input of ``op``, in its order (the draws' order is the seed's contract): ``data(name, dtype)`` for the
    (M, N) data roles (other data shapes: normal values), weights and biases in their own dtype, scales positive
    (0.5 + U[0, 1)), labels and indices from their role's maker given ``label_rows(inputs so far)`` (default:
    uniform in [0, N)). ``made_rows(make, dtype, params)``: an (M, N) input of the op's own maker (a mask), when
    given (a large case's SparseRows)."""
    dts, opdef, out = _as_dtypes(dtypes), get_op(op), {}
    merged = {**opdef.params, **(params or {})}
    for t in opdef.inputs:
        role = opdef.role(t)
        dtype = opdef.input_dtype(t, dts, params)  # weights: their own dtype
        shape = opdef.shape_of(t, M, N, merged)
        if role.make is not None and made_rows is not None and tuple(shape) == (M, N):
            out[t] = made_rows(role.make, dtype, merged)
        elif role.make is not None:  # the op's own maker (labels, a mask): sees the x drawn so far
            out[t] = _cast(np.asarray(role.make(rng, label_rows(out), merged, policy)), dtype)
        elif role.kind == "labels":
            out[t] = rng.integers(0, N, size=shape).astype(_dt.numpy_dtype(dtype))
        elif role.kind == "data":
            out[t] = data(t, dtype) if role.shape == "rows" else _cast(rng.standard_normal(shape), dtype)
        elif role.kind == "scale":
            out[t] = _cast(0.5 + rng.random(shape), dtype)
        else:
            v = 1.0 + 0.1 * rng.standard_normal(shape) if role.kind == "weight" else 0.1 * rng.standard_normal(shape)
            out[t] = _cast(v, dtype)
    return out


_EXP = "exp"  # ops: every op whose OpDef has exp_family (the softmax family, cross entropy)


def _has_inf(dt: str) -> bool:
    try:
        _need_inf(dt, "")
    except UsageError:
        return False
    return True


def _holds(v: float) -> Callable[[str], bool]:
    return lambda dt: _dt.is_float(dt) and float(_dt.finfo(dt).max) >= v


def _enough_values(dt: str) -> bool:
    """200 strictly increasing values near [-4, 4]: every dtype but the 8-bit floats has them."""
    return not dt.startswith("float8")


def _float(dt: str) -> bool:
    return _dt.is_float(dt)


# The ops whose naive formulas cancel on rows of large offset and tiny spread (variance, mean subtraction, the
# softmax's max subtraction).
_CANCEL = ("layernorm", "rmsnorm", "fused_add_rmsnorm", "softmax", "log_softmax", "online_softmax_stats")
_CANCEL += ("group_norm", "group_norm_noaffine", "row_amax", "row_mean", "var_mean", "l2norm", "rmsnorm_noweight",
            "layernorm_noweight", "layernorm_bias")  # issue #37, norm variants

# (name, exposes, M at 'ci', N, sampler factory, ops, dtype_ok, M is the point)
_TABLE = [
    ("normal_small", "baseline: ordinary N(0,1) rows", 4, 128, rand_normal, None, None, False),
    ("mean_gg_std_100_102", "cancellation / missing max subtraction: values in [100, 102]", 4, 1024,
     lambda r: rand_mean_gg_std(r, 101.0, 1.0), None, _float, False),
    ("mean_gg_std_1000", "E[x²]-E[x]² variance cancellation: values 1000 ± 1", 4, 1024,
     lambda r: rand_mean_gg_std(r, 1000.0, 1.0), None, _holds(1001.0), False),
    ("cancel_ulp_bumps", "cancellation in every dtype: rows of 1000s with one or two elements a few ULPs above, "
     "and 1000 + a few ULPs (E[x²] - E[x]² loses the variance)", 4, 512, rand_ulp_bumps, _CANCEL, _holds(1024.0),
     False),
    ("partial_neg_inf_mask", "-inf mask: exp(-inf - m) must be 0, not NaN", 4, 256,
     rand_partial_neg_inf_mask, _EXP, _has_inf, False),
    ("one_neg_inf_row32", "a single -inf in a warp-wide row of 32", 4, 32, rand_one_neg_inf, _EXP, _has_inf,
     False),
    ("fully_masked_rows", "all -inf rows: NaN there, and no NaN leaking into other rows", 4, 64,
     rand_fully_masked, _EXP, _has_inf, False),
    ("masked_prefix_40000", "the first 33,000 of 40,000 elements -inf (left padding): a tile of only -inf before the "
     "first finite value (tiles up to 32,768), where an online max gives exp(-inf - -inf) = NaN", 2, 40000,
     rand_masked_prefix, _EXP, _has_inf, False),
    ("d1", "row of one element", 4, 1, rand_normal, None, None, False),
    ("d7_below_warp", "row shorter than a warp: empty lanes must hold the merge identity", 4, 7, rand_normal,
     None, None, False),
    ("d15_below_warp", "row of 15: half-warp and empty lanes", 4, 15, rand_normal, None, None, False),
    ("d31_below_warp", "row of 31: one empty lane", 4, 31, rand_normal, None, None, False),
    ("d32_warp", "row of exactly one warp", 4, 32, rand_normal, None, None, False),
    ("d33_above_warp", "row of 33: one element past the warp (tail loop)", 4, 33, rand_normal, None, None, False),
    ("n1000", "non-power-of-two row length 1000", 4, 1000, rand_normal, None, None, False),
    ("n3584", "non-power-of-two hidden size 3584", 2, 3584, rand_normal, None, None, False),
    ("n5120", "non-power-of-two hidden size 5120", 2, 5120, rand_normal, None, None, False),
    ("cols_mod4_1029", "N % 4 != 0: vectorized (float4) loads need a scalar tail", 4, 1029, rand_normal, None,
     None, False),
    ("cols_not_mult256_772", "N not a multiple of 256 (block size): partial last block", 4, 772, rand_normal,
     None, None, False),
    ("past_exp_overflow", "values past exp overflow: exp without max subtraction gives inf/NaN", 4, 256,
     rand_past_exp_overflow, _EXP, _float, False),
    ("constant_rows", "constant rows: variance exactly 0, softmax exactly uniform", 4, 256, rand_constant_rows,
     None, None, False),
    ("increasing_rows", "strictly increasing rows: online softmax must rescale at every element", 4, 200,
     rand_increasing_rows, None, _enough_values, False),
    ("zero_rows", "all-zero rows: rms 0, only eps keeps the norm finite", 4, 256, rand_zero_rows, None, None, False),
    ("subnormals", "subnormal inputs: flush-to-zero and underflowing squares", 4, 256, rand_subnormals, None,
     _float, False),
    ("signed_zeros", "+0 and -0 only", 4, 64, rand_signed_zeros, None, _float, False),
    ("some_nan", "NaN in the input must propagate to its row only", 4, 128, rand_some_nan, None, _float, False),
    ("m1", "a single row (M = 1)", 1, 1024, rand_normal, None, None, True),
    ("m7_rows_not_mult_block", "M = 7: not a multiple of rows per block", 7, 96, rand_normal, None, None, True),
    ("m13_rows_not_mult_block", "M = 13: not a multiple of rows per block", 13, 96, rand_normal, None, None, True),
    ("vocab_152064", "vocabulary-length row (Qwen, 152064): long loops, sum error growth", 2, 152064,
     rand_normal, None, None, True),
    ("m2049_short_rows", "2049 rows of 16: several rows per program from a large batch (attorch: 2 from 2048 rows, "
     "N < 64) and an odd M: a grid of M // R never reaches the last row", 2049, 16, rand_normal, None, None, True),
]
THOROUGH_ONLY = ("m2049_short_rows",)  # 2049 programs: seconds per kernel and dtype in the interpreter CI runs ci in

_QUICK = ("normal_small", "d7_below_warp", "mean_gg_std_1000", "fully_masked_rows", "zero_rows", "increasing_rows")

# (name, exposes, M at 'ci', N, layout): ordinary N(0, 1) values laid out as callers' views are. Last in the
# catalogue: a CUDA fault ends a kernel's battery, so every ordinary case has run by then.
_LAYOUT_CASES = [
    ("strided_rows_pad64", f"rows N + {_lay.ROW_PAD} elements apart (a slice qkv[:, :N]); the gaps between rows "
     "hold the dtype's max and must be neither read into a result nor written", 6, 1024, _lay.STRIDED),
    ("unaligned_1elem_past_16bytes", f"every tensor starts one element past a {_lay.ALIGN}-byte boundary (a view "
     "into a larger buffer): vector loads chosen from N alone fault", 4, 1024, _lay.UNALIGNED),
]
def sparse_maker(M: int, N: int, wrap: int, stride=None):
    """``make`` of a large case (verifier.inputs.large_family): data roles, and (M, N) inputs of an op's own maker (a
    mask), as SparseRows (a PATTERN-element pattern repeated, the judged rows drawn on their own: a whole float64
    mask would be 17 GB at 2^31 elements), weights and biases as usual, labels random (1-D: held whole)."""
    def make(rng: np.random.Generator, dtypes, op: str, params: dict | None = None) -> dict:
        dt = _as_dtypes(dtypes).input

        def data(t, dtype):
            pattern = _cast(rand_normal(rng)((1, _lay.PATTERN), dt), dt).reshape(-1)
            judged = _lay.judged_rows(M, N, wrap, stride)
            own = _cast(rand_normal(rng)((len(judged), N), dt), dt)
            return _lay.SparseRows((M, N), pattern.dtype, dict(zip(judged.tolist(), own)), pattern, stride)

        def made(make, dtype, merged):  # a mask, say: its maker run on the judged rows, and on rows for the pattern
            judged = _lay.judged_rows(M, N, wrap, stride)
            own = _cast(np.asarray(make(rng, np.zeros((len(judged), N)), merged, None)), dtype)
            rows = -(-_lay.PATTERN // N)
            pattern = _cast(np.asarray(make(rng, np.zeros((rows, N)), merged, None)), dtype).reshape(-1)
            return _lay.SparseRows((M, N), pattern.dtype, dict(zip(judged.tolist(), own)), pattern[:_lay.PATTERN],
                                   stride)

        return _inputs(rng, dtypes, op, params, M, N, data, lambda out: np.broadcast_to(np.float64(0.0), (M, N)), None,
                       made)
    return make


def catalogue(op: str, dtypes=None, level: str = DEFAULT_LEVEL) -> list[Case]:
    """The adversarial cases for ``op`` (and, when given, the input dtype of ``dtypes``: cases
    whose values the dtype cannot hold, e.g. -inf in float8_e4m3fn or 1000 in int8, are left out).

    level: 'quick' a handful of cases; 'ci' every case at small M, the strided and unaligned layouts last;
    'thorough' every case with M = 16 rows (M = 1, 7, 13 and the vocabulary row keep their M). The large family
    (verifier.inputs.large_family) is appended by verifier.inputs.cases.cases_for."""
    opdef = get_op(op)
    if level not in LEVELS:
        raise UsageError(f"unknown run level {level!r}", fix=f"use one of {', '.join(LEVELS)}")
    lv = LEVELS[level]
    exp_ops = tuple(o.name for o in OPS.values() if o.exp_family)
    rows = [(name, exposes, M, N, factory, exp_ops if ops == _EXP else ops, ok, fixed_m, None, name in _QUICK)
            for name, exposes, M, N, factory, ops, ok, fixed_m in _TABLE]
    rows += [(c.name, c.exposes, c.M, c.N, c.sampler, (opdef.base,), c.dtype_ok, c.fixed_m, c.policy, c.quick)
             for c in opdef.cases if set(c.needs) <= set(opdef.inputs)]
    cases = []
    for name, exposes, M, N, factory, ops, ok, fixed_m, policy, quick in rows:
        if lv.quick_cases_only and not quick or name in THOROUGH_ONLY and level != "thorough":
            continue
        if lv.rows is not None and not fixed_m:
            M = lv.rows
        case = Case(name, exposes, M, N, maker(M, N, factory, policy), ops, ok)
        if case.applies_to(opdef.base, dtypes):  # a variant (optional inputs present) has its op's cases
            cases.append(case)
    if not lv.quick_cases_only:
        for name, exposes, M, N, kind in _LAYOUT_CASES:
            M = lv.rows or M
            cases.append(Case(name, exposes, M, N, maker(M, N, rand_normal), layout=_lay.Layout(kind)))
    return cases
