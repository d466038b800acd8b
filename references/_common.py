"""Shared pieces of the references: exact upcasts, certified row sums, mpmath rounding, certification.

Error model used by every module's a-priori bound (u = 2**-53):
- a float64 +, -, *, /, sqrt returns the exact result times (1 + d), |d| <= u, plus an absolute
  error below 2**-1074 when the result is subnormal (covered by ``TINY`` terms);
- numpy's float64 ``exp`` and ``log`` are within ``C_EXP``/``C_LOG`` u of the exact value (relative).
  This is the one assumption about libm ("rigorous-ish"); tests/test_references.py measures the real
  error against mpmath and fails if it gets anywhere near these constants;
- a row sum from ``rowsum`` comes with its own bound (math.fsum is correctly rounded).
Bounds are first-order and then inflated by a few percent (``SLACK``), which covers the dropped
second-order terms by many orders of magnitude.
"""
from __future__ import annotations

import math

import mpmath
import numpy as np

from verifier import dtypes as _dt
from verifier.numerics.ulp import round_to

U = 2.0**-53
TINY = 2.0**-1060  # absolute slack for subnormal intermediates (many times 2**-1074)
SUB = 2.0**-1074
C_EXP = 8.0  # numpy float64 exp: relative error <= C_EXP * u (4 ulps; ~1.1 u measured on x86-64 AVX2)
C_LOG = 8.0
SLACK = 1.05
_FSUM_MIN_N = 17  # below this np.sum with the gamma_{N-1} bound is as tight and avoids a Python loop


def as_f64(a) -> np.ndarray:
    """Exact float64 copy of an input array (any dtype up to float64, ml_dtypes included)."""
    arr = np.asarray(a)
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when casting its NaNs
        return arr.astype(np.float64)


def squares_exact(a) -> bool:
    """True when x*x is exact in float64 for every value of ``a``'s dtype (<= 26 significant bits)."""
    name = _dt.canonical(np.asarray(a).dtype)
    return name not in ("float64", "int32")


def rowsum(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row sum of a 2-D float64 array and an absolute bound on its error.

    Rows with a non-finite input get numpy's value (inf/NaN semantics) and bound 0; a finite row
    whose sum overflows float64 gets bound inf (the caller recomputes it in mpmath).
    """
    N = a.shape[1]
    with np.errstate(all="ignore"):
        s = np.sum(a, axis=1)
        finite_row = np.all(np.isfinite(a), axis=1)
        if N < _FSUM_MIN_N:
            gamma = (N - 1) * U / (1 - (N - 1) * U)
            err = gamma * np.sum(np.abs(a), axis=1)
        else:
            for i in np.flatnonzero(finite_row):
                try:
                    s[i] = math.fsum(a[i].tolist())
                except OverflowError:
                    s[i] = np.inf
            err = U * np.abs(s)  # correctly rounded: |s - sum| <= u |sum| <= u |s| / (1 - u)
        err = np.where(finite_row, np.where(np.isfinite(s), err * SLACK, np.inf), 0.0)
    return s, err


def row_scale(x: np.ndarray) -> np.ndarray:
    """Per-row power-of-two exponent k that brings rows with max|x| > 2**500 near 1 (else 0).

    Only float64 inputs can get there; scaling by 2**-k is exact (up to underflow of elements that are
    2**-1000 below the row max, which the TINY terms cover) and keeps x*x from overflowing.
    """
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(x), axis=1) if x.shape[1] else np.zeros(x.shape[0])
    big = np.isfinite(amax) & (amax > 2.0**500)
    _, ex = np.frexp(np.where(big, amax, 1.0))
    return np.where(big, ex, 0).astype(np.int64)


def rows_of(rows, M: int) -> np.ndarray:
    return np.arange(M) if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)


def mpf_rows(x: np.ndarray, rows) -> list[list]:
    """Rows of a float64 array as lists of exact mpf values."""
    return [[mpmath.mpf(v) for v in x[i].tolist()] for i in rows]


# --------------------------------------------------------------------------- rounding of mpf values

def round_mpf(v, name: str) -> float:
    """The float64 holding ``v`` (an mpf, exact as given) rounded to nearest-even into dtype ``name``.

    Integer arithmetic on the mantissa, so there is exactly one rounding. Overflow as verifier.numerics.ulp.round_to:
    +-inf for IEEE formats, saturation to +-max for float8_e4m3fn.
    """
    if mpmath.isnan(v):
        return math.nan
    fi = _dt.finfo(name)
    p, emin, vmax = int(fi.nmant) + 1, int(fi.minexp), float(fi.max)
    if mpmath.isinf(v):
        return float(round_to(np.array([float(v)]), name)[0])
    sign, man, exp, bc = v._mpf_
    if man == 0:
        return -0.0 if sign else 0.0
    e = exp + bc - 1  # binade: 2**e <= |v| < 2**(e+1)
    qexp = max(e, emin) - p + 1  # spacing of the target dtype at |v|
    shift = qexp - exp
    if shift <= 0:
        n = man << -shift
    else:
        n, rem = divmod(man, 1 << shift)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and n & 1):
            n += 1
    r = math.ldexp(n, qexp) if n.bit_length() + qexp <= 1024 else math.inf
    if r > vmax:
        r = vmax if name == "float8_e4m3fn" else math.inf
    return -r if sign else r


def _round64(v: np.ndarray, name: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return round_to(v, name).astype(np.float64)


# --------------------------------------------------------------------------- certification

def certify(module, inputs: dict, params: dict, values: dict, bounds: dict, dtypes: dict,
            certify_float64: bool = False):
    """Round ``values`` into ``dtypes`` correctly, recomputing near-ties in mpmath.

    An element is ambiguous when [v - bound, v + bound] rounds to two different values of its dtype
    (the interval straddles a rounding midpoint, or a bound is inf/NaN). Its row is re-evaluated with
    ``module.mp`` at two precisions (dps, dps+20); the difference of the two is taken as the error of the
    lower one (Ziv), and precision doubles until the rounding is unambiguous. Two exactly equal results
    are taken as exact (a true tie then rounds to even). float64 outputs are certified only when
    ``certify_float64`` (nearly every element is then ambiguous, so every row is recomputed).

    Returns (exact, rounded, bound, recomputed): float64 values (mpmath-corrected where recomputed), the
    correctly rounded arrays in their dtypes, the updated absolute bounds, and the recomputed count.
    """
    exact = {k: v.copy() for k, v in values.items()}
    bound = {k: b.copy() for k, b in bounds.items()}
    r64 = {}
    flags = {}
    for k, v in values.items():
        name = dtypes[k]
        b = bound[k]
        with np.errstate(all="ignore"):
            lo = np.nextafter(v - b, -np.inf)
            hi = np.nextafter(v + b, np.inf)
        r64[k] = _round64(v, name)
        if name == "float64" and not certify_float64:
            flags[k] = np.zeros(v.shape, bool)
            continue
        same = _round64(lo, name) == _round64(hi, name)
        flags[k] = (b != 0) & ~same
    recomputed = 0
    pending = {k: np.argwhere(f) for k, f in flags.items() if f.any()}
    dps = 60
    while pending:
        rows = sorted({int(ix[0]) for idx in pending.values() for ix in idx})
        pos = {r: i for i, r in enumerate(rows)}
        lo_res = module.mp(inputs, params, rows=rows, dps=dps)
        hi_res = module.mp(inputs, params, rows=rows, dps=dps + 20)
        still = {}
        for k, idx in pending.items():
            name = dtypes[k]
            keep = []
            for ix in idx:
                j = (pos[int(ix[0])],) + tuple(int(t) for t in ix[1:])
                a, c = lo_res[k][j], hi_res[k][j]
                if mpmath.isfinite(c) and mpmath.isfinite(a):
                    err = 2 * abs(a - c)
                    down, up = round_mpf(c - err, name), round_mpf(c + err, name)
                    if down != up and dps < 1200:
                        keep.append(ix)
                        continue
                t = tuple(int(s) for s in ix)
                r64[k][t] = round_mpf(c, name)
                exact[k][t] = float(c)
                bound[k][t] = U * abs(float(c)) if mpmath.isfinite(c) else 0.0
                recomputed += 1
            if keep:
                still[k] = np.array(keep)
        pending = still
        dps *= 2
    rounded = {k: round_to(r64[k], dtypes[k]) for k in r64}
    return exact, rounded, bound, recomputed
