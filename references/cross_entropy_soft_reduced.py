"""cross_entropy_soft_reduced: the soft-label cross entropy (references.cross_entropy_soft, its variants included)
reduced over the rows into one value, loss[1], as torch's F.cross_entropy(x, target, reduction='mean' | 'sum') with
class-probability targets (timm's SoftTargetCrossEntropy): 'sum' adds every row's loss, 'mean' divides that sum by
M (no row is ignored: PyTorch's probability targets have no ignore_index).

float64 bound: the rows' bounds added, plus the sum's own rounding, M·u·sum|loss_i| (any order), plus u|mean| for
the division; mp sums the rows' mpmath losses exactly (fsum).
"""
from __future__ import annotations

import mpmath
import numpy as np

from references import cross_entropy_soft as _rows
from references._common import SLACK, TINY, U
from verifier.errors import UsageError

REDUCTIONS = ("mean", "sum")


def check_inputs(inputs: dict, params: dict) -> None:
    if params.get("reduction") not in REDUCTIONS:
        raise UsageError(f"cross_entropy_soft_reduced: reduction {params.get('reduction')!r}",
                         fix="use 'mean' or 'sum' (reduction='none' is op cross_entropy_soft, loss[M])")
    _rows.check_inputs(inputs, params)


def float64(inputs: dict, params: dict):
    """(values, bounds): {'loss': [1]}, {'loss': [1]}."""
    values, bounds = _rows.float64(inputs, params)
    loss, b = values["loss"], bounds["loss"]
    M = loss.shape[0]
    with np.errstate(all="ignore"):
        total = np.sum(loss)
        bound = np.sum(b) + M * U * np.sum(np.abs(loss)) * SLACK
        if params["reduction"] == "mean":
            total, bound = total / M, bound / M + U * abs(total / M)
    bound = (bound + TINY) * SLACK if np.isfinite(total) else 0.0
    return {"loss": np.array([total])}, {"loss": np.array([bound])}


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'loss': object array [1] of mpf}: the one output element (rows is [0])."""
    out = np.empty(1, dtype=object)
    with mpmath.workdps(dps):
        terms = list(_rows.mp(inputs, params, None, dps)["loss"])
        total = mpmath.fsum(terms)
        out[0] = total / len(terms) if params["reduction"] == "mean" else total
    return {"loss": out}
