"""cross_entropy_reduced: the per-row cross entropy (references.cross_entropy, its variants included) reduced over
the rows into one value, loss[1], as torch's cross_entropy(reduction='sum' | 'mean'): 'sum' adds the rows whose label
is not ``ignore_index`` (ignored rows count 0), 'mean' divides that sum by the number of such rows (PyTorch without
class weights), so a batch of only ignored rows gives 0/0 = NaN in 'mean' (``empty_mean='nan'``, PyTorch's; a kernel
returning 0 there, as Liger, declares ``empty_mean='zero'``) and 0 in 'sum'.

float64 bound: the rows' bounds added, plus the sum's own rounding, gamma(M)·sum|loss_i| (any order), plus u|mean|
for the division; mp sums the rows' mpmath losses exactly (fsum).
"""
from __future__ import annotations

import mpmath
import numpy as np

from references import cross_entropy as _rows
from references._common import SLACK, TINY, U, as_f64, mpf_rows
from verifier.errors import UsageError

REDUCTIONS = ("mean", "sum")
EMPTY_MEAN = {"nan": np.nan, "zero": 0.0}  # a mean over no counted row


def check_inputs(inputs: dict, params: dict) -> None:
    if params.get("reduction") not in REDUCTIONS:
        raise UsageError(f"cross_entropy_reduced: reduction {params.get('reduction')!r}",
                         fix="use 'mean' or 'sum' (reduction='none' is op cross_entropy, loss[M])")
    if params.get("empty_mean") not in EMPTY_MEAN:
        raise UsageError(f"cross_entropy_reduced: empty_mean {params.get('empty_mean')!r}",
                         fix="use 'nan' (PyTorch: a mean over no row is 0/0) or 'zero' (the kernel writes 0 there)")
    _rows.check_inputs(inputs, params)


def float64(inputs: dict, params: dict):
    """(values, bounds): {'loss': [1]}, {'loss': [1]}."""
    loss, b, ignored = _rows.rows_float64(inputs, params)
    n = int((~ignored).sum())
    M = loss.shape[0]
    with np.errstate(all="ignore"):
        total = np.sum(loss)
        bound = np.sum(b) + M * U * np.sum(np.abs(loss)) * SLACK
        if params["reduction"] == "mean":
            total = total / n if n else np.float64(EMPTY_MEAN[params["empty_mean"]])
            bound = bound / n + U * abs(total) if n else 0.0
    bound = (bound + TINY) * SLACK if np.isfinite(total) else 0.0
    return {"loss": np.array([total])}, {"loss": np.array([bound])}


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'loss': object array [1] of mpf}: the one output element (rows is [0])."""
    x = as_f64(inputs["x"])
    t, ignored = _rows._labels(inputs, params)
    out = np.empty(1, dtype=object)
    with mpmath.workdps(dps):
        live = [r for r in range(x.shape[0]) if not ignored[r]]
        terms = [_rows.mp_loss(xr, int(t[r]), params) for r, xr in zip(live, mpf_rows(x, live))]
        total = mpmath.fsum(terms) if terms else mpmath.mpf(0)
        if params["reduction"] == "mean":
            total = total / len(terms) if terms else mpmath.mpf(EMPTY_MEAN[params["empty_mean"]])
        out[0] = total
    return {"loss": out}
