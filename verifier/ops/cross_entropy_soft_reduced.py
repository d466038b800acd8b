"""cross_entropy_soft_reduced: the soft-label cross entropy (op cross_entropy_soft) reduced over the rows into
loss[1]: PyTorch's F.cross_entropy(x, target, reduction='mean' | 'sum') with class-probability targets, timm's
SoftTargetCrossEntropy (mixup / cutmix training). Params: cross_entropy_soft's and reduction='mean' ('mean': the
sum over the M rows divided by M, every row counting: probability targets have no ignore_index; 'sum').
A separate op for the reason cross_entropy_reduced is one: a batch's loss[1] is judged differently from loss[M]."""
from __future__ import annotations

import numpy as np

from verifier.numerics.errmodel import gamma
from verifier.numerics.violations import finite_violation
from verifier.ops.cross_entropy import REDUCED_CASES, SOFT, SOFT_CASES, k_cross_entropy_soft, make_target
from verifier.ops.model import Op, OpCase, Tensor
from verifier.ops.samplers import normal as _normal


def _rows(x, xs, p):
    """The rows' losses in float64 (the reference's), for the per-row bounds' last rounding."""
    from references import cross_entropy_soft

    return cross_entropy_soft.float64({"x": x, "target": xs["target"]}, p)[0]["loss"]


def k_cross_entropy_soft_reduced(x, total, p, c, xs):
    """loss[1] = sum (or mean) over the M rows of cross_entropy_soft's loss: the rows' bounds (that op's kappa)
    added, the sum of M terms in any order gamma(M + 1)·sum|loss_i|, and for the mean 2u|mean| (the division,
    or a kernel dividing each row by M before the sum; M is exact)."""
    loss = _rows(x, xs, p)
    E = k_cross_entropy_soft(x, loss, p, c, xs)
    M = x.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        Et = np.sum(E) + gamma(M + 1, c.u) * np.sum(np.abs(loss))
        if p["reduction"] == "mean":
            Et = Et / M + 2 * c.u * np.abs(total)
    return np.broadcast_to(np.asarray(Et, dtype=np.float64), np.shape(total))


def check(x_raw, inp, ys, params, dtypes, c):
    """The batch's one value: finite where every row's logits and target are finite."""
    must = bool(np.isfinite(inp["x"]).all() and np.isfinite(inp["target"]).all())
    return finite_violation("cross_entropy_soft_reduced.finite", np.array([must]), np.asarray(ys["loss"]).reshape(1, -1))


CASES = SOFT_CASES + tuple(OpCase(k.name.replace("ce_", "ce_soft_", 1), k.exposes, k.M, k.N, _normal, fixed_m=True)
                           for k in REDUCED_CASES)

OPDEF = Op(
    "cross_entropy_soft_reduced", inputs={"x": "MxN", "target": Tensor("MxN", "input", make=make_target)},
    outputs={"loss": "1"}, params={**SOFT.params, "reduction": "mean"},
    reference="references.cross_entropy_soft_reduced",
    recipe={"loss": (1.0, "cross_entropy_soft_reduced")},
    kappas={"cross_entropy_soft_reduced": k_cross_entropy_soft_reduced},
    out_dtypes=SOFT.out_dtypes, float64=False, online_override=True, exp_family=True, invariants=check, cases=CASES,
    description="soft-label cross entropy summed ('sum') or averaged over the rows ('mean'), timm's "
                "SoftTargetCrossEntropy",
)
