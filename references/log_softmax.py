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

from references._common import C_LOG, SLACK, TINY, U, as_f64, rows_of
from references._logits import fully_masked, logits
from references.softmax import exp_stage, masked_rows_zero, mp_lse, mp_rows, with_lse


def float64(inputs: dict, params: dict):
    """(values, bounds): {'y': log_softmax in float64}, {'y': absolute error bound}."""
    x, zb, sink = logits(inputs, params)
    m, d, e, S, sigma, special = exp_stage(x, sink)
    with np.errstate(all="ignore"):
        L = np.log(S)
        y = d - L[:, None]
        lerr = sigma * (1 + sigma) + C_LOG * U * np.abs(L)
        # a logit off by zb_j moves y_j by zb_j and log S by at most max zb
        zmax = np.max(np.where(np.isfinite(zb), zb, 0.0), axis=1, keepdims=True)
        b = (U * np.abs(d) + lerr[:, None] + U * np.abs(y) + TINY + zb + zmax) * SLACK
    b[special] = 0.0
    b[np.isneginf(x)] = 0.0  # exactly -inf
    out, bounds = {"y": y}, {"y": b}
    masked_rows_zero(out, bounds, fully_masked(x, sink), params)
    with_lse(out, bounds, inputs, params)
    return out, bounds


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'y': object array [len(rows), N] of mpf} evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])

    def row(r, zr):
        L = mpmath.log(r[2])
        return [(v - r[0]) - L for v in zr]
    rows = rows_of(rows, x.shape[0])
    with mpmath.workdps(dps):
        got = {"y": mp_rows(inputs, params, rows, x.shape[1], row)}
        if params.get("lse"):
            got["lse"] = mp_lse(inputs, params, rows)
        return got
