"""cross_entropy: loss = logsumexp(x) - x[label] per row (no reduction), torch semantics with
reduction='none': loss[i] = -log_softmax(x[i])[labels[i]], as float32 (the loss dtype whatever the
logits' dtype).

Labels: integers in [0, N), or ``ignore_index`` (default -100): that row's loss is exactly 0
whatever its logits hold (NaN included), as torch's nll_loss gives. Any other label is a usage error.
Special values of a row that is not ignored, as log_softmax: a NaN anywhere, a +inf anywhere, or an
all -inf row gives NaN; a -inf logit at the label of an otherwise finite row gives +inf.

float64 bound (absolute), as log_softmax's at the label: with m the row max, d_t = x_t - m and
S = sum exp(x - m) (relative error sigma, see softmax), loss = log S - d_t is off by u|d_t|
(subtraction) + sigma(1 + sigma) + C_LOG u |log S| (log) + u |loss| (final subtraction). A loss near
0 (the label holds almost all the mass) has a bound large relative to it, and is recomputed in mpmath.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import C_LOG, SLACK, TINY, U, as_f64, mpf_rows, rows_of
from references.softmax import exp_stage, mp_row
from verifier.errors import UsageError


def _labels(inputs: dict, params: dict):
    t = np.asarray(inputs["labels"]).astype(np.int64)
    ignored = t == int(params["ignore_index"])
    return np.where(ignored, 0, t), ignored


def check_inputs(inputs: dict, params: dict) -> None:
    """Labels must be integers in [0, N) or the ignore_index."""
    lab = np.asarray(inputs["labels"])
    if lab.dtype.kind not in "iu":
        raise UsageError(f"cross_entropy reference: labels have dtype {lab.dtype}", fix="pass int64 or int32 labels")
    t, ignored = _labels(inputs, params)
    N = np.asarray(inputs["x"]).shape[1]
    bad = ~ignored & ((t < 0) | (t >= N))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise UsageError(f"cross_entropy reference: label {int(lab[i])} of row {i} is outside [0, {N})",
                         fix=f"use class indices 0..{N - 1}, or ignore_index={params['ignore_index']} to skip a row")


def float64(inputs: dict, params: dict):
    """(values, bounds): {'loss': loss in float64}, {'loss': absolute error bound}."""
    x = as_f64(inputs["x"])
    t, ignored = _labels(inputs, params)
    m, d, e, S, sigma, special = exp_stage(x)
    rows = np.arange(x.shape[0])
    with np.errstate(all="ignore"):
        L = np.log(S)
        d_t = d[rows, t]
        loss = L - d_t
        lerr = sigma * (1 + sigma) + C_LOG * U * np.abs(L)
        b = (U * np.abs(d_t) + lerr + U * np.abs(loss) + TINY) * SLACK
    loss = np.where(special, np.nan, loss)
    b[special | ~np.isfinite(loss)] = 0.0  # NaN rows, and +inf where the label's logit is -inf
    loss[ignored] = 0.0
    b[ignored] = 0.0
    return {"loss": loss}, {"loss": b}


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'loss': object array [len(rows)] of mpf} evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])
    t, ignored = _labels(inputs, params)
    rows = rows_of(rows, x.shape[0])
    out = np.empty(len(rows), dtype=object)
    with mpmath.workdps(dps):
        for i, (r, xr) in enumerate(zip(rows, mpf_rows(x, rows))):
            if ignored[r]:
                out[i] = mpmath.mpf(0)
                continue
            st = mp_row(xr)
            out[i] = mpmath.nan if st is None else mpmath.log(st[2]) - (xr[t[r]] - st[0])
    return {"loss": out}
