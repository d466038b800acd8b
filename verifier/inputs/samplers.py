"""Named samplers of adversarial inputs, in the style of JAX's ``public_test_util``: ``rand_x(rng, ...)`` takes an
explicit ``numpy.random.Generator`` and returns ``fn(shape, dtype) -> float64 array`` whose values are already
representable in ``dtype`` (rounded to nearest-even where needed), so a case's cast into the input dtype changes
nothing and a sampler's promise ("strictly increasing", "subnormal", "past exp overflow") holds for what the kernel
reads. Integer dtypes get integers of the full range. The case catalogue (verifier.inputs.catalogue) builds its
cases from them and re-exports them."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.numerics.ulp import round_to, ulp

Sampler = Callable[[tuple, str], np.ndarray]


def is_int(dtype: str) -> bool:
    return not _dt.is_float(dtype)


def _fit(v: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded into ``dtype`` (exactly representable afterwards)."""
    if is_int(dtype):
        info = np.iinfo(_dt.numpy_dtype(dtype))
        return np.clip(np.rint(v), info.min, info.max).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to(v, dtype).astype(np.float64)


def _int_full_range(rng, shape, dtype) -> np.ndarray:
    info = np.iinfo(_dt.numpy_dtype(dtype))
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(np.float64)


def need_inf(dtype: str, who: str) -> None:
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
        if is_int(dtype):
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
        need_inf(dtype, "rand_partial_neg_inf_mask")
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
        need_inf(dtype, "rand_masked_prefix")
        v = _fit(rng.standard_normal(shape), dtype)
        v[..., :int(shape[-1] * frac)] = -np.inf
        return v
    return fn


def rand_nan_row_ends(rng: np.random.Generator) -> Sampler:
    """N(0, 1) rows with one NaN: at column 0 in even rows, at the last column in odd rows. Over a row of many tiles,
    an online max starting at -inf meets the NaN in its first tile: maxnum(NaN, -inf) is -inf, and a guard that skips
    a lane whose max is still -inf (``where(m_new == -inf, z, ...)``) then skips the NaN too, so the row comes out
    finite (FlagGems' softmax past 32,768 columns); a NaN met later propagates."""
    def fn(shape, dtype):
        v = _fit(rng.standard_normal(shape), dtype)
        v[0::2, 0] = np.nan
        v[1::2, -1] = np.nan
        return v
    return fn


def rand_one_neg_inf(rng: np.random.Generator) -> Sampler:
    """N(0, 1) with exactly one -inf per row."""
    def fn(shape, dtype):
        need_inf(dtype, "rand_one_neg_inf")
        v = _fit(rng.standard_normal(shape), dtype)
        pos = rng.integers(shape[-1], size=shape[:-1])
        np.put_along_axis(v, pos[..., None], -np.inf, axis=-1)
        return v
    return fn


def rand_fully_masked(rng: np.random.Generator, frac: float = 0.5) -> Sampler:
    """N(0, 1) rows, some (at least one, not all when M > 1) entirely -inf: softmax of such a row is
    NaN, and a -inf identity in a max merge must not turn other rows into NaN."""
    def fn(shape, dtype):
        need_inf(dtype, "rand_fully_masked")
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
        c = (_int_full_range(rng, shape[:-1], dtype) if is_int(dtype)
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
        if is_int(dtype):
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
