"""cross_entropy's optional outputs (Op outputs declared Tensor(..., optional=True)): the per-row lse flash-attn's and
Unsloth's kernels store for their backward (params {"lse": True}) and flash-attn's per-row z_losses = z·lse², 0 on
ignored rows (params {"z_losses": True}); their budgets (the lse part of the loss's bound) and the contract
lse_nonfinite for rows with no finite lse. The reference is references/cross_entropy.py's."""
from __future__ import annotations

import numpy as np

from verifier.ops.contract import Contract
from verifier.ops.tensors import Tensor

OUTPUTS = {"lse": Tensor("M", dtype="float32", optional=True),
           "z_losses": Tensor("M", dtype="float32", optional=True)}
PARAMS = {"lse": None, "lse_nonfinite": None, "z_losses": None}
# a row with no finite lse (a NaN or +inf logit, every logit -inf): NaN as m + log(sum exp(x - m)) gives it, or
# torch.logsumexp's +inf / -inf; open for the kernels writing lse or z_losses (a warning names it when undeclared)
CONTRACTS = {"lse_nonfinite": Contract(("nan", "inf"), when=lambda p: bool(p.get("lse") or p.get("z_losses")))}
RECIPE = {"lse": (1.0, "cross_entropy_lse"), "z_losses": (1.0, "cross_entropy_z_losses")}


def kappas(row_errors) -> dict:
    """The two outputs' budget formulas, given the loss's per-row bound ``row_errors(x, p, c, xs)`` -> (nll, E_nll,
    lse, E_lse, x', m, ignored) (verifier.ops.cross_entropy, which passes it: one derivation of E_lse)."""

    def k_cross_entropy_lse(x, lse, p, c, xs):
        """lse = m + log s of the (scaled, capped) logits: the E_lse of the loss's bound, sigma + u(c_in·|m| + the
        log's units + |m + log s|) plus the softcap's error; every row, ignored ones included (kernels store it
        before testing the label)."""
        return row_errors(x, p, c, xs)[3]

    def k_cross_entropy_z_losses(x, zl, p, c, xs):
        """z_losses = z·lse² per row, 0 where the label is ignored: z(2|lse|·E_lse + E_lse²) + 3u·z·lse², the z_loss
        term of the loss."""
        _, _, lse, E_lse, _, _, ignored = row_errors(x, p, c, xs)
        zc = float(p.get("z_loss", 0.0))
        with np.errstate(over="ignore", invalid="ignore"):
            E = zc * (2 * np.abs(lse) * E_lse + E_lse * E_lse) + 3 * c.u * zc * lse * lse
        return np.where(ignored, 0.0, E)

    return {"cross_entropy_lse": k_cross_entropy_lse, "cross_entropy_z_losses": k_cross_entropy_z_losses}
