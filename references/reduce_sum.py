"""reduce_sum: y[i] = sum_j x[i, j], x[M, N] -> y[M].

Integer inputs are summed exactly in int64 (int32 * N < 2**63 for any N < 2**32); ``exact_int`` gives
that sum, and the float64 value carries |sum - float64(sum)| as its bound (0 below 2**53).
Float inputs: math.fsum per row, correctly rounded (bound u|y|); a finite row whose sum overflows float64
gets bound inf and is recomputed exactly. NaN/inf follow IEEE (inf + -inf = NaN), as torch.sum.
The mpmath evaluation is exact (arbitrary-precision additions), whatever ``dps``.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import as_f64, mpf_rows, rows_of, rowsum


def is_int(inputs: dict) -> bool:
    return np.asarray(inputs["x"]).dtype.kind in "iu"


def exact_int(inputs: dict) -> np.ndarray:
    """The exact int64 row sums of an integer input."""
    return np.sum(np.asarray(inputs["x"]).astype(np.int64), axis=1)


def float64(inputs: dict, params: dict):
    """(values, bounds): {'y': row sums in float64 [M]}, {'y': absolute error bound}."""
    if is_int(inputs):
        s = exact_int(inputs)
        y = s.astype(np.float64)
        # |s| < 2**63 and float64 -> int is exact below 2**63; compare in Python ints at the edge
        err = np.array([abs(int(a) - int(f)) for a, f in zip(s.tolist(), y.tolist())], dtype=np.float64) \
            if np.any(np.abs(y) > 2.0**53) else np.zeros_like(y)
        return {"y": y}, {"y": err}
    y, err = rowsum(as_f64(inputs["x"]))
    return {"y": y}, {"y": err}


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'y': object array [len(rows)] of mpf}: exact sums."""
    x = np.asarray(inputs["x"])
    rows = rows_of(rows, x.shape[0])
    out = np.empty(len(rows), dtype=object)
    if is_int(inputs):
        with mpmath.workprec(128):  # mpf(int) rounds to the context precision; |sum| < 2**63
            for i, r in enumerate(rows):
                out[i] = mpmath.mpf(int(np.sum(x[r].astype(np.int64))))
        return {"y": out}
    for i, xr in enumerate(mpf_rows(as_f64(x), rows)):
        acc = mpmath.mpf(0)
        for v in xr:
            acc = mpmath.fadd(acc, v, exact=True)
        out[i] = acc
    return {"y": out}
