"""softmax: y = exp(x - max(x)) / sum(exp(x - max(x))) per row, with torch's special-value semantics.

Semantics (torch CPU, float64, checked in tests/test_references.py): the formula itself, evaluated with
IEEE inf/NaN arithmetic. So a NaN anywhere in a row, a +inf anywhere in a row (inf - inf = NaN), or a row
entirely -inf (max = -inf, -inf - -inf = NaN) gives a NaN row; a -inf entry of an otherwise finite row
gives exactly 0.

float64 evaluation and its a-priori bound (u = 2**-53): m is exact; d = fl(x - m) has relative error u,
which exp turns into a relative error |d| u; exp adds C_EXP u. The row sum S is math.fsum of the
exponentials (correctly rounded), so S is off by sigma = u (1 + C_EXP + W) relative, with W the
softmax-weighted mean of |d| (not max |d|: far-away terms weigh nothing). Then
|y - y_true| <= y ((|d| + C_EXP + 1) u + sigma) plus subnormal slack. Exactly-0 entries (x = -inf)
and special rows have bound 0.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import C_EXP, SLACK, SUB, TINY, U, as_f64, mpf_rows, rows_of, rowsum


def exp_stage(x: np.ndarray):
    """Shared by softmax, log_softmax and the online statistics.

    Returns m, d, e, S, sigma, special: row max, x - m, exp(d), row sum of e, a bound on the relative
    error of S, and the mask of rows that are special (NaN, +inf, or all -inf).
    """
    M, N = x.shape
    with np.errstate(all="ignore"):
        m = np.max(x, axis=1)
        d = x - m[:, None]
        e = np.exp(d)
        S, S_err = rowsum(e)
        ad = np.minimum(np.abs(d), 746.0)  # exp underflows to 0 below -745; its error is absolute then
        W = rowsum(e * ad)[0] / S
        sigma = (S_err / S + U * (C_EXP + W) * SLACK + N * SUB / S) * SLACK
    special = ~np.isfinite(m) | ~np.isfinite(S)
    return m, d, e, S, sigma, special


def float64(inputs: dict, params: dict):
    """(values, bounds): {'y': softmax in float64}, {'y': absolute error bound}."""
    x = as_f64(inputs["x"])
    m, d, e, S, sigma, special = exp_stage(x)
    with np.errstate(all="ignore"):
        y = e / S[:, None]
        ad = np.minimum(np.abs(d), 746.0)
        b = (y * ((ad + C_EXP + 1) * U + sigma[:, None]) + TINY) * SLACK
    b[special] = 0.0
    b[np.isneginf(x)] = 0.0  # exactly 0 (or part of a special row)
    return {"y": y}, {"y": b}


def mp_row(xr: list):
    """(m, exps, S) of one row of mpf values, or None when the row is special (NaN result)."""
    if any(mpmath.isnan(v) for v in xr):
        return None
    m = max(xr)
    if mpmath.isinf(m):  # +inf present, or the whole row is -inf
        return None
    e = [mpmath.exp(v - m) for v in xr]  # exp(-inf) = 0
    return m, e, mpmath.fsum(e)


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'y': object array [len(rows), N] of mpf} evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])
    rows = rows_of(rows, x.shape[0])
    out = np.empty((len(rows), x.shape[1]), dtype=object)
    with mpmath.workdps(dps):
        for i, xr in enumerate(mpf_rows(x, rows)):
            r = mp_row(xr)
            out[i] = [mpmath.nan] * len(xr) if r is None else [ej / r[2] for ej in r[1]]
    return {"y": out}
