"""log_softmax: y = (x - max(x)) - log(sum(exp(x - max(x)))) per row, torch semantics.

Special values as softmax (NaN row for NaN, +inf or all -inf), except that a -inf entry of a finite row
gives exactly -inf.

float64 bound (absolute): d = fl(x - m) is off by u|d|; S is off by sigma relative (see softmax), so
log S is off by sigma (1 + sigma) plus C_LOG u |log S| from log itself; the final subtraction adds u|y|.
Where y is near 0 (d close to log S: cancellation) the bound is large relative to y and the element gets
recomputed in mpmath.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import C_LOG, SLACK, TINY, U, as_f64, mpf_rows, rows_of
from references.softmax import exp_stage, mp_row


def float64(inputs: dict, params: dict):
    """(values, bounds): {'y': log_softmax in float64}, {'y': absolute error bound}."""
    x = as_f64(inputs["x"])
    m, d, e, S, sigma, special = exp_stage(x)
    with np.errstate(all="ignore"):
        L = np.log(S)
        y = d - L[:, None]
        lerr = sigma * (1 + sigma) + C_LOG * U * np.abs(L)
        b = (U * np.abs(d) + lerr[:, None] + U * np.abs(y) + TINY) * SLACK
    b[special] = 0.0
    b[np.isneginf(x)] = 0.0  # exactly -inf
    return {"y": y}, {"y": b}


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'y': object array [len(rows), N] of mpf} evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])
    rows = rows_of(rows, x.shape[0])
    out = np.empty((len(rows), x.shape[1]), dtype=object)
    with mpmath.workdps(dps):
        for i, xr in enumerate(mpf_rows(x, rows)):
            r = mp_row(xr)
            if r is None:
                out[i] = [mpmath.nan] * len(xr)
            else:
                L = mpmath.log(r[2])
                out[i] = [(v - r[0]) - L for v in xr]
    return {"y": out}
