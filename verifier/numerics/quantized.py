"""Quantized formats: fp8 e4m3fn, fp8 e5m2 and int8 as grids of representable values, with saturation at the
format's own maximum and the rounding modes kernels use (nearest-even, int8's half-away-from-zero, or a plain
cast's truncation toward zero: C's float -> int8 conversion, CTranslate2's quantize_kernel).

A quantized output is ``y_q = saturate(round(t))``: ``t`` is the exact pre-quantization value (``y / scale``),
``saturate`` clamps to [-qmax, qmax] (448 for e4m3fn, 57344 for e5m2, 127 for int8) and ``round`` picks the nearer
of the two grid values around ``t``, a tie going to the even code (nearest-even) or away from zero (half-away); or
the one of the two nearer to zero (toward_zero: truncation, whose boundaries are the grid values themselves).
Every finite value of an 8-bit format is in one sorted table of at most 255 values, so rounding, the neighbours of a
value and the rounding boundaries (midpoints between neighbours) are table look-ups, the same for every format.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError

QUANT_DTYPES = ("float8_e4m3fn", "float8_e5m2", "int8")
ROUNDINGS = ("nearest_even", "half_away", "toward_zero")


@dataclass(frozen=True)
class Format:
    """One quantized dtype: ``grid`` its finite values ascending (±0 once), ``even`` whether each value's code is
    even (its last mantissa bit, or the integer, is 0), ``qmax`` its saturation bound."""

    dtype: str
    grid: np.ndarray
    even: np.ndarray
    qmax: float

    def quantize(self, t, rounding: str = "nearest_even") -> np.ndarray:
        """saturate(round(t)) as float64 (NaN stays NaN)."""
        if rounding not in ROUNDINGS:
            raise UsageError(f"unknown rounding {rounding!r}", fix=f"use one of {', '.join(ROUNDINGS)}")
        t = np.asarray(t, dtype=np.float64)
        g = self.grid
        with np.errstate(invalid="ignore"):
            c = np.clip(t, -self.qmax, self.qmax)
        c = np.where(np.isnan(c), 0.0, c)
        hi = np.clip(np.searchsorted(g, c, side="left"), 1, len(g) - 1)  # g[hi-1] < c <= g[hi], or c at an end
        lo = hi - 1
        a, b = g[lo], g[hi]
        if rounding == "toward_zero":  # a <= c <= b, neighbours: the one nearer to zero unless c is the other
            out = np.where(c == b, b, np.where(c == a, a, np.where(c > 0, a, b)))
            return np.where(np.isnan(t), np.nan, out)
        mid = (a + b) / 2  # exact: two values of an 8-bit format
        if rounding == "nearest_even":
            tie = np.where(self.even[hi], b, a)
        else:
            tie = np.where(np.abs(b) > np.abs(a), b, a)
        out = np.where(c < mid, a, np.where(c > mid, b, tie))
        out = np.where(c == a, a, np.where(c == b, b, out))
        return np.where(np.isnan(t), np.nan, out)

    def steps(self, a, b) -> np.ndarray:
        """How many grid steps lie between the values ``a`` and ``b`` (both on the grid; ±0 are one value)."""
        ia = np.searchsorted(self.grid, np.asarray(a, dtype=np.float64))
        ib = np.searchsorted(self.grid, np.asarray(b, dtype=np.float64))
        return np.abs(ia - ib)

    def nearest_boundary(self, t, rounding: str = "nearest_even") -> np.ndarray:
        """The rounding boundary nearest to ``t`` (a midpoint between two neighbours, or ±qmax, past which every
        value saturates; truncation's: the grid values)."""
        t = np.asarray(t, dtype=np.float64)
        mids = self.grid if rounding == "toward_zero" else \
            np.concatenate([[-self.qmax], (self.grid[1:] + self.grid[:-1]) / 2, [self.qmax]])
        c = np.where(np.isnan(t), 0.0, t)
        i = np.clip(np.searchsorted(mids, c), 1, len(mids) - 1)
        lo, hi = mids[i - 1], mids[i]
        return np.where(np.abs(c - lo) <= np.abs(hi - c), lo, hi)


@lru_cache(maxsize=None)
def fmt(dtype) -> Format:
    """The Format of a quantized dtype (a UsageError for any other dtype)."""
    name = _dt.canonical(dtype)
    if name not in QUANT_DTYPES:
        raise UsageError(f"{name} is not a quantized output dtype",
                         fix=f"quantized outputs are {', '.join(QUANT_DTYPES)}")
    if name == "int8":
        codes = np.arange(-127, 128, dtype=np.int64)  # -128 is never produced: saturation is symmetric (±127)
        return Format(name, codes.astype(np.float64), codes % 2 == 0, 127.0)
    bits = np.arange(256, dtype=np.uint8)
    vals = bits.view(_dt.numpy_dtype(name)).astype(np.float64)
    keep = np.isfinite(vals) & ~((vals == 0) & (bits >= 128))  # -0 is +0 on the grid
    order = np.argsort(vals[keep], kind="stable")
    grid = vals[keep][order]
    even = (bits[keep][order] & 1) == 0
    return Format(name, grid, even, float(grid[-1]))


def resolve_params(op, params: dict, out_dtype: str) -> dict:
    """An op's params with ``qmax`` filled in: a quantizing op's ``qmax=None`` means its quantized output format's
    max (448, 57344, 127); a kernel declaring another (ROCm's fnuz 224) keeps its own."""
    if op.quantized and "qmax" in op.params and params.get("qmax") is None:
        return {**params, "qmax": fmt(out_dtype).qmax}
    return params
