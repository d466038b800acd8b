"""online_softmax_stats: per row m = max(x) and l = sum(exp(x - m)), and the merge rule for partials.

Semantics: a row entirely -inf is the empty partial (m = -inf, l = 0), the identity of ``merge`` (not
NaN: a kernel that splits a row into chunks must be able to merge an all-masked chunk). A NaN in a row
gives (NaN, NaN); a +inf gives m = +inf, l = NaN (inf - inf), as softmax's NaN row.

float64: m is exact (bound 0); l = math.fsum of the exponentials with the relative bound sigma
derived in references/softmax.py.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import SLACK, as_f64, rows_of
from references._logits import logits, mp_logits
from references.softmax import exp_stage


def float64(inputs: dict, params: dict):
    """(values, bounds): {'m', 'l'} in float64 (shape [M]) and their absolute error bounds."""
    x, zb, sink = logits(inputs, params)
    m, d, e, S, sigma, special = exp_stage(x, sink)
    empty = np.isneginf(m)
    l = np.where(empty, 0.0, S)
    with np.errstate(invalid="ignore"):
        # logits off by zb: the max by max zb, each term exp(z_j - m) by zb_j + max zb relatively
        zmax = np.max(np.where(np.isfinite(zb), zb, 0.0), axis=1)
        lb = np.where(special, 0.0, S * sigma + 2 * zmax * S * SLACK)
    return {"m": m, "l": l}, {"m": zmax, "l": lb}


def merge(a, b):
    """Merge two partials a = (m1, l1), b = (m2, l2) (scalars or arrays) into the partial of the union.

    m = max(m1, m2); l = l1 * exp(m1 - m) + l2 * exp(m2 - m), where a factor whose m equals m is exactly 1.
    That makes the empty partial (-inf, 0) an identity (no -inf - -inf = NaN), keeps +inf partials from
    turning into NaN through inf - inf, and still propagates NaN (NaN != NaN).
    """
    m1, l1 = (np.asarray(t, dtype=np.float64) for t in a)
    m2, l2 = (np.asarray(t, dtype=np.float64) for t in b)
    m = np.maximum(m1, m2)  # NaN propagates
    with np.errstate(invalid="ignore", over="ignore"):
        f1 = np.where(m1 == m, 1.0, np.exp(m1 - m))
        f2 = np.where(m2 == m, 1.0, np.exp(m2 - m))
        return m, l1 * f1 + l2 * f2


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'m', 'l'}: object arrays [len(rows)] of mpf evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])
    rows = rows_of(rows, x.shape[0])
    ms = np.empty(len(rows), dtype=object)
    ls = np.empty(len(rows), dtype=object)
    with mpmath.workdps(dps):
        zs, sinks = mp_logits(inputs, params, rows)
        for i, (xr, sink) in enumerate(zip(zs, sinks)):
            if any(mpmath.isnan(v) for v in xr):
                ms[i] = ls[i] = mpmath.nan
                continue
            m = max(xr) if sink is None else max(max(xr), sink)
            xr = xr if sink is None else xr + [sink]
            ms[i] = m
            if m == -mpmath.inf:
                ls[i] = mpmath.mpf(0)
            elif m == mpmath.inf:
                ls[i] = mpmath.nan
            else:
                ls[i] = mpmath.fsum(mpmath.exp(v - m) for v in xr)
    return {"m": ms, "l": ls}
