"""Rounding into a dtype, the dtype's spacing, and distances in units in the last place (ULPs).

Supported: float64 float32 float16 bfloat16 float8_e4m3fn float8_e5m2 (and int8/int32 for
``ulp_distance``/``ulp``, see there). Everything is vectorized; inputs may be numpy arrays
(ml_dtypes included), numpy/python scalars or torch tensors (read bit-exactly).

Rounding is round-to-nearest-even, done here on float64 rather than by ``astype``: ml_dtypes
casts float64 -> bfloat16/float8 through float32, which double-rounds (1 + 2**-8 + 2**-40 becomes
bfloat16 1.0 instead of 1.0078125). For inputs exactly representable in float32 the result is the
same as ml_dtypes'.

Overflow: float32/float16/bfloat16/float8_e5m2 follow IEEE 754 (a value whose unbounded-exponent
rounding exceeds max becomes +-inf). float8_e4m3fn has no infinity (its all-ones pattern is NaN,
which is what ml_dtypes' cast produces on overflow); we saturate instead: every value beyond max,
+-inf included, becomes +-448. That is what kernels storing e4m3 produce with
``__nv_cvt_*_to_fp8x*(..., __NV_SATFINITE, __NV_E4M3)`` / Triton's saturating casts, so a reference
rounded that way is the value a correct kernel writes. NaN stays NaN.
"""
from __future__ import annotations

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError

__all__ = ["round_to", "ulp", "ulp_distance"]

_SATURATING = ("float8_e4m3fn",)
_UINT = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}


def _float_params(name: str):
    """(p, emin, max): significand bits including the implicit one, min normal exponent, max finite."""
    fi = _dt.finfo(name)
    return int(fi.nmant) + 1, int(fi.minexp), float(fi.max)


def _as_float64(x) -> np.ndarray:
    arr = _dt.to_numpy(x)
    if arr.dtype.kind not in "fiub" and _dt.canonical(arr.dtype) not in _dt.FLOAT_DTYPES:
        raise UsageError(f"cannot read values of dtype {arr.dtype} as numbers", fix="pass a float or int array")
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when casting its NaNs
        return arr.astype(np.float64)


def _require_float(name: str, what: str) -> None:
    if name not in _dt.FLOAT_DTYPES:
        raise UsageError(f"{what} needs a floating-point dtype, got {name}",
                         fix=f"use one of {', '.join(_dt.FLOAT_DTYPES)}")


_IEEE_CAST = {"float32": np.float32, "float16": np.float16}


def _round64(x: np.ndarray, name: str) -> np.ndarray:
    """float64 values rounded (RNE) to ``name``'s value set, still as float64 (exact)."""
    if name == "float64":
        return x.copy()
    if name in _IEEE_CAST:  # numpy's casts round float64 once (RNE, gradual underflow, overflow to inf); ml_dtypes'
        with np.errstate(over="ignore"):  # bfloat16 / float8 casts go through float32 (rounding twice): scaled
            return np.asarray(x).astype(_IEEE_CAST[name]).astype(np.float64)
    return _round_scaled(x, name)


def _round_scaled(x: np.ndarray, name: str) -> np.ndarray:
    """_round64 for any float dtype by power-of-two scaling and rint (tests/test_ulp.py checks float32's fast path
    against it)."""
    p, emin, vmax = _float_params(name)
    shape, x = np.shape(x), np.asarray(x).reshape(-1)  # 1-d: numpy gives a 0-d array's results as scalars
    # Over the whole array (masking out the non-finite values first copied every array twice; on the long rows
    # of the catalogue that was the judge's largest cost): inf and NaN go through the arithmetic harmlessly and
    # are put back as given below.
    _, ex = np.frexp(x)  # x = m * 2**ex, m in [0.5, 1): binade exponent is ex - 1
    ex -= 1
    np.maximum(ex, emin, out=ex)
    ex -= p - 1
    q = np.ldexp(1.0, ex)  # spacing of the target at x
    # x / q and r * q are exact power-of-two scalings; rint is RNE and keeps the sign of zero.
    r = np.divide(x, q)
    np.rint(r, out=r)
    r *= q
    big = np.abs(r) > vmax  # unbounded-exponent rounding went past max: overflow (NaN compares False)
    if big.any():
        r[big] = np.copysign(vmax if name in _SATURATING else np.inf, r[big])
    fin = np.isfinite(x)
    if not fin.all():
        np.copyto(r, x, where=~fin)  # inf and NaN as given
        if name in _SATURATING:
            inf = np.isinf(x)
            r[inf] = np.copysign(vmax, x[inf])
    return r.reshape(shape)


def round_to(x, dtype) -> np.ndarray:
    """``x`` (any float/int array, scalar or torch tensor) rounded to nearest-even into ``dtype``.

    Returns an array of that dtype (ml_dtypes for bfloat16/float8). Overflow as in the module
    docstring: +-inf for IEEE formats, saturation to +-max for float8_e4m3fn.
    """
    name = _dt.canonical(dtype)
    _require_float(name, "round_to")
    with np.errstate(over="ignore", invalid="ignore"):
        return _round64(_as_float64(x), name).astype(_dt.numpy_dtype(name))


def ulp(x, dtype) -> np.ndarray:
    """Spacing of ``dtype`` at |x|, as float64.

    For |x| in [2**e, 2**(e+1)) it is 2**(e - p + 1) (p = significand bits), extrapolated the same
    way past max; in the subnormal range and at 0 it is the smallest subnormal; NaN at +-inf/NaN.
    ``x`` is used as given (not rounded to ``dtype`` first). For int8/int32 the spacing is 1.
    """
    name = _dt.canonical(dtype)
    x = _as_float64(x)
    if name in _dt.INT_DTYPES:
        return np.where(np.isfinite(x), 1.0, np.nan)
    p, emin, _ = _float_params(name)
    if emin - p + 1 >= -1022:  # the spacing is a normal float64 (every dtype but float64): built from its bits
        return _spacing_bits(x, p, emin)
    with np.errstate(invalid="ignore"):
        _, ex = np.frexp(x)  # frexp(0) has exponent 0; 0 belongs to the subnormal range
        ex = np.where(x == 0, emin, np.maximum(ex - 1, emin))
        return np.where(np.isfinite(x), np.ldexp(1.0, ex - p + 1), np.nan)


def _spacing_bits(x: np.ndarray, p: int, emin: int) -> np.ndarray:
    """ulp() where 2**(emin - p + 1) is a normal float64: the binade exponent read from x's float64 exponent field
    (0 and float64 subnormals read far below emin, so they take emin as frexp's path does), the power of two written
    as one (a few integer passes instead of frexp, where and ldexp: ulp is a large part of judging)."""
    shape = np.shape(x)
    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    field = (flat.view(np.int64) >> 52) & 0x7FF
    ex = field - 1023
    np.maximum(ex, emin, out=ex)
    ex += 1023 - p + 1
    out = (ex << 52).view(np.float64)
    nonfinite = field == 0x7FF
    if nonfinite.any():
        out[nonfinite] = np.nan
    return out.reshape(shape)


def _ordinal_parts(v: np.ndarray):
    """(negative, magnitude-rank) of values of a float dtype: the bit pattern without its sign.

    Within one sign the magnitude bits order the values monotonically (IEEE-style encodings), so
    ord(v) = -mag if negative else mag places every value on the integer line, +-0 both at 0 and
    +-inf one step past +-max.
    """
    bits = v.view(_UINT[v.dtype.itemsize])  # v is a fresh astype result: contiguous, any ndim
    nbits = 8 * v.dtype.itemsize
    sign = bits >> np.array(nbits - 1, bits.dtype)
    mag = (bits & np.array((1 << (nbits - 1)) - 1, bits.dtype)).astype(np.uint64)
    return sign.astype(bool), mag


def _check_shapes(a: np.ndarray, e: np.ndarray) -> None:
    if a.shape != e.shape:
        raise UsageError(
            f"ulp_distance: actual has shape {a.shape} but expected has shape {e.shape}",
            fix="compare arrays of the same shape (reshape or index them first; no broadcasting is done)",
        )


def _int_distance(a: np.ndarray, e: np.ndarray, name: str) -> np.ndarray:
    info = np.iinfo(_dt.numpy_dtype(name))
    if a.dtype.kind in "iub":
        a_int = a.astype(np.int64)
    else:
        a64 = _as_float64(a)
        if not np.all(np.isfinite(a64) & (a64 == np.rint(a64))):
            raise UsageError(f"ulp_distance: actual holds non-integer values but the output dtype is {name}",
                             fix=f"pass the kernel's {name} output as written")
        a_int = a64.astype(np.int64)
    if a_int.size and (a_int.min() < info.min or a_int.max() > info.max):
        raise UsageError(f"ulp_distance: actual holds values outside the {name} range",
                         fix=f"pass the kernel's {name} output as written")
    if e.dtype.kind in "iub":
        return np.asarray(np.abs(a_int - e.astype(np.int64)), dtype=np.float64)
    with np.errstate(invalid="ignore"):
        d = np.asarray(np.abs(a_int.astype(np.float64) - _as_float64(e)))
    d[np.isnan(d)] = np.inf
    return d


def ulp_distance(actual, expected, dtype) -> np.ndarray:
    """Per element, how many steps between adjacent ``dtype`` values separate ``actual`` from ``expected``.

    ``expected`` (any float; usually the float64 reference) is first rounded to ``dtype`` with
    :func:`round_to` (so float8_e4m3fn references past 448 saturate to +-448, as a saturating kernel
    writes them, instead of becoming NaN and counting as a NaN mismatch). ``actual`` must hold
    values of ``dtype``: arrays of a wider float type are accepted only when every value is exactly
    representable in ``dtype`` (a kernel's output is in its output dtype; anything else is a
    harness bug).

    distance = |ord(actual) - ord(round_to(expected))| with ord the sign-magnitude rank of the
    encoding: +0 and -0 are 0 apart, crossing zero counts the subnormal steps on both sides,
    +-inf sit one step past +-max. NaN vs NaN is 0; NaN vs a number (either way) is +inf.
    Returned as float64 (exact below 2**53).

    Integer dtypes (int8/int32, e.g. an int8 -> int32 reduction): |actual - expected| as float64,
    expected not rounded (a non-integral or NaN expected shows up as a fractional/inf distance).

    Shapes must be equal; there is no broadcasting.
    """
    name = _dt.canonical(dtype)
    a = _dt.to_numpy(actual)
    e = _dt.to_numpy(expected)
    _check_shapes(a, e)
    if name in _dt.INT_DTYPES:
        return _int_distance(a, e, name)

    with np.errstate(over="ignore", invalid="ignore"):
        a64 = _as_float64(a)
        if a.dtype.kind in "iub":
            raise UsageError(f"ulp_distance: actual is an integer array ({a.dtype}) but the output dtype is {name}",
                             fix=f"pass the kernel's {name} output as written")
        ar = _round64(a64, name)
        bad = (ar != a64) & ~(np.isnan(ar) & np.isnan(a64))
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise UsageError(
                f"ulp_distance: actual ({a.dtype}) holds {int(bad.sum())} value(s) not representable in {name}, "
                f"first {float(a64[idx])!r} at index {idx}",
                fix=f"pass the kernel's output in its output dtype {name} (do not upcast or compute on it first)",
            )
        np_dt = _dt.numpy_dtype(name)
        av = ar.astype(np_dt)
        er = _round64(_as_float64(e), name)
        ev = er.astype(np_dt)

    sa, ma = _ordinal_parts(av)
    se, me = _ordinal_parts(ev)
    # uint64 cannot overflow: each magnitude is < 2**63, and opposite signs add magnitudes.
    same = np.maximum(ma, me) - np.minimum(ma, me)
    d = np.where(sa == se, same, ma + me).astype(np.float64)
    na, ne = np.isnan(ar), np.isnan(er)
    d[na != ne] = np.inf
    d[na & ne] = 0.0
    return d
