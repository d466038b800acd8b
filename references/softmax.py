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

from references._common import C_EXP, C_LOG, SLACK, SUB, TINY, U, as_f64, rows_of, rowsum
from references._logits import fully_masked, logits, mp_logits
from verifier.ops.softmax_lse import LN2, base_of, special_lse


def exp_stage(x: np.ndarray, sink=None):
    """Shared by softmax, log_softmax and the online statistics.

    Returns m, d, e, S, sigma, special: row max, x - m, exp(d), row sum of e, a bound on the relative
    error of S, and the mask of rows that are special (NaN, +inf, or all -inf).
    """
    M, N = x.shape
    with np.errstate(all="ignore"):
        m = np.max(x, axis=1)
        if sink is not None:  # one more logit per row, in the max and the sum only (attention sinks)
            m = np.fmax(m, sink)
        d = x - m[:, None]
        e = np.exp(d)
        S, S_err = rowsum(e if sink is None else np.concatenate([e, np.exp(sink - m)[:, None]], axis=1))
        ad = np.minimum(np.abs(d), 746.0)  # exp underflows to 0 below -745; its error is absolute then
        W = rowsum(e * ad)[0] / S
        sigma = (S_err / S + U * (C_EXP + W) * SLACK + N * SUB / S) * SLACK
    special = ~np.isfinite(m) | ~np.isfinite(S)
    return m, d, e, S, sigma, special


def logit_spread(y, zb):
    """The error a bound ``zb`` on the logits adds to y = softmax: |d log y_j| <= zb_j + max_k zb_k."""
    with np.errstate(all="ignore"):
        return y * (zb + np.max(np.where(np.isfinite(zb), zb, 0.0), axis=1, keepdims=True)) * SLACK


def masked_rows_zero(values: dict, bounds: dict, dead, params: dict, value: float = 0.0) -> None:
    """``masked_rows='zeros'``: the rows with no live logit are ``value`` (exact), not NaN."""
    if params.get("masked_rows") == "zeros" and dead.any():
        for k in values:
            values[k][dead] = value
            bounds[k][dead] = 0.0


def float64(inputs: dict, params: dict):
    """(values, bounds): {'y': softmax in float64}, {'y': absolute error bound}."""
    x, zb, sink = logits(inputs, params)
    m, d, e, S, sigma, special = exp_stage(x, sink)
    with np.errstate(all="ignore"):
        y = e / S[:, None]
        ad = np.minimum(np.abs(d), 746.0)
        b = (y * ((ad + C_EXP + 1) * U + sigma[:, None]) + TINY) * SLACK + logit_spread(y, zb)
    b[special] = 0.0
    b[np.isneginf(x)] = 0.0  # exactly 0 (or part of a special row)
    out, bounds = {"y": y}, {"y": b}
    masked_rows_zero(out, bounds, fully_masked(x, sink), params)
    with_lse(out, bounds, inputs, params)
    return out, bounds


def with_lse(values: dict, bounds: dict, inputs: dict, params: dict) -> None:
    """The optional output lse (params lse=True; verifier.ops.softmax_lse): m + log S of the logits z and the sink,
    in the declared base; a row with no finite lse as ``lse_nonfinite`` says. Bound: S off by sigma relative (so
    log S by sigma(1 + sigma)), the log C_LOG·u|log S|, the add u|lse|, the logits' own error max zb (lse is
    1-Lipschitz in the max norm); base 2 divides by ln 2 (one more rounding, u|lse2|)."""
    if not params.get("lse"):
        return
    z, zb, sink = logits(inputs, params)
    m, _, _, S, sigma, special = exp_stage(z, sink)
    with np.errstate(all="ignore"):
        L = np.log(S)
        lse = m + L
        b = (sigma * (1 + sigma) + C_LOG * U * np.abs(L) + U * np.abs(lse) + TINY) * SLACK
        b = b + np.max(np.where(np.isfinite(zb), zb, 0.0), axis=1) * SLACK
        if base_of(params) == "2":
            lse = lse / LN2
            b = (b / LN2 + U * np.abs(lse)) * SLACK
    zs = z if sink is None else np.concatenate([z, sink[:, None]], axis=1)
    lse = np.where(special, special_lse(zs, params), lse)
    b[special | ~np.isfinite(lse)] = 0.0
    values["lse"], bounds["lse"] = lse, b


def mp_lse(inputs: dict, params: dict, rows) -> np.ndarray:
    """Object array [len(rows)]: lse of each row in mpmath (the caller's precision), in the declared base."""
    zs, sinks = mp_logits(inputs, params, rows)
    out = np.empty(len(rows), dtype=object)
    for i, (zr, sink) in enumerate(zip(zs, sinks)):
        r = mp_row(zr, sink)
        if r is None:
            row = np.array([[float(v) for v in zr] + ([] if sink is None else [float(sink)])])
            out[i] = mpmath.mpf(float(special_lse(row, params)[0]))
        else:
            out[i] = (r[0] + mpmath.log(r[2])) / (mpmath.log(2) if base_of(params) == "2" else 1)
    return out


def mp_row(xr: list, sink=None):
    """(m, exps, S) of one row of mpf values (and its sink logit), or None when the row is special (NaN result)."""
    if any(mpmath.isnan(v) for v in xr):
        return None
    m = max(xr) if sink is None else max(max(xr), sink)
    if mpmath.isinf(m):  # +inf present, or the whole row is -inf
        return None
    e = [mpmath.exp(v - m) for v in xr]  # exp(-inf) = 0
    return m, e, mpmath.fsum(e + ([] if sink is None else [mpmath.exp(sink - m)]))


def mp_rows(inputs: dict, params: dict, rows, N: int, fn):
    """Object array [len(rows), N]: ``fn(mp_row result)`` per row; a special row is NaN, or 0 when it has no live
    logit and the kernel declares masked_rows='zeros'."""
    out = np.empty((len(rows), N), dtype=object)
    zs, sinks = mp_logits(inputs, params, rows)
    for i, (zr, sink) in enumerate(zip(zs, sinks)):
        r = mp_row(zr, sink)
        if r is not None:
            out[i] = fn(r, zr)
        elif params.get("masked_rows") == "zeros" and all(v == -mpmath.inf for v in zr) and sink is None:
            out[i] = [mpmath.mpf(0)] * N
        else:
            out[i] = [mpmath.nan] * N
    return out


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'y': object array [len(rows), N] of mpf} evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])
    rows = rows_of(rows, x.shape[0])
    with mpmath.workdps(dps):
        got = {"y": mp_rows(inputs, params, rows, x.shape[1], lambda r, zr: [ej / r[2] for ej in r[1]])}
        if params.get("lse"):
            got["lse"] = mp_lse(inputs, params, rows)
        return got
