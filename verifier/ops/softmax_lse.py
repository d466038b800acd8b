"""The softmax family's optional per-row log-sum-exp (softmax, log_softmax): ``lse[M]`` float32, the logsumexp of the
row's logits z after every declared transform (scale, softcap, ALiBi, mask, causal; a sink is one more term of the
sum, so it is in lse), which attention-style softmax kernels (flash-attn's ``softmax_lse``, Triton softmax kernels
kept for a backward, online-softmax finalizers) write beside y. params: ``lse=True`` (the kernel writes it),
``lse_base`` 'e' (the default: flash-attn, torch.logsumexp) or '2' (log2-sum-exp2 = lse / ln 2: FlashInfer's and some
Triton kernels'), and the contract ``lse_nonfinite`` for a row with no finite lse (no live logit; a NaN or +inf
logit):

    'nan'    m + log(sum exp(z - m)) as written: NaN on every such row (the reference while undeclared)
    'inf'    torch.logsumexp's: NaN with a NaN logit, +inf with a +inf logit, -inf when nothing is live
    'posinf' flash-attn's (sum == 0 or NaN ? +inf): +inf on every such row
    'neginf' flash-attn's split-KV partials (-inf on every such row: the merge's identity)

The budget (docs/tolerances.md, "softmax's lse") is the softmax denominator's own analysis."""
from __future__ import annotations

import dataclasses

import numpy as np

from verifier.errors import SpecError
from verifier.numerics.errmodel import gamma
from verifier.ops.contract import Contract
from verifier.ops.tensors import Tensor

BASES = ("e", "2")
LN2 = float(np.log(2.0))
NONFINITE = ("nan", "inf", "posinf", "neginf")

OUTPUTS = {"lse": Tensor("M", dtype="float32", optional=True)}
PARAMS = {"lse": None, "lse_base": "e", "lse_nonfinite": None}
CONTRACTS = {"lse_nonfinite": Contract(NONFINITE, when=lambda p: bool(p.get("lse")))}
RECIPE = {"lse": (1.0, "softmax_lse")}


def base_of(params: dict) -> str:
    """The declared base, 'e' or '2' (the int 2 read as '2')."""
    b = params.get("lse_base", "e")
    b = "2" if b == 2 else b
    if b not in BASES:
        raise SpecError(f"softmax: lse_base={params.get('lse_base')!r}",
                        fix="use 'e' (natural log: flash-attn, torch.logsumexp) or '2' (log2-sum-exp2: FlashInfer)")
    return b


def special_lse(z: np.ndarray, params: dict) -> np.ndarray:
    """[M]: the lse of a row with no finite one under the declared ``lse_nonfinite`` (z with its sink column, float64;
    read only on such rows)."""
    how = params.get("lse_nonfinite") or "nan"
    M = z.shape[0]
    if how == "posinf":
        return np.full(M, np.inf)
    if how == "neginf":
        return np.full(M, -np.inf)
    if how == "nan":
        return np.full(M, np.nan)
    with np.errstate(all="ignore"):
        return np.where(np.isnan(z).any(axis=1), np.nan, np.where((z == np.inf).any(axis=1), np.inf, -np.inf))


def kappas(logit_units, softmax_parts, row_softmax) -> dict:
    """lse's budget formula, from the family's pieces (verifier.ops.softmax passes them: one derivation)."""

    def k_softmax_lse(x, lse, p, c, xs):
        """lse = m + log s on the logits z (with the sink column): s errs by sigma = gamma(s_units) + N·eta relative
        (the softmax's denominator: each term's exp and argument errors, the sum, an online kernel's rescales), so
        log s by sigma (absolute); the log intrinsic (log_abs + log_rel·|log s|), the add u|m + log s|, a 16-bit input
        widened c_in·u|m|; a logit off by dz_j moves lse by at most max_j dz_j (lse is 1-Lipschitz in the max norm:
        d lse / d z_j = p_j). Base 2 (lse / ln 2, or m·log2(e) + log2 s): that over ln 2, plus the constant's rounding
        and the product or conversion, 3u(|m| + |lse|) / ln 2. A row with no finite lse is compared as declared."""
        z, dz, dead = logit_units(x, p, c, xs)  # dz = dz_j + max dz: its max is twice the largest logit error
        cz = dataclasses.replace(c, N=z.shape[-1])
        with np.errstate(all="ignore"):
            m, _, _, s_units = softmax_parts(np.where(dead[:, None], 0.0, z), cz, weights=row_softmax(z))
            m = m[:, 0]
            log_s = np.log(np.sum(np.exp(z - m[:, None]), axis=-1))
            sigma = gamma(s_units[:, 0], c.u) + cz.N * c.eta
            units = c.intr.log_abs + c.intr.log_rel * np.abs(log_s) + np.abs(m + log_s) + c.c_in * np.abs(m)
            E = sigma + c.u * units + c.u * np.max(dz, axis=-1) / 2 if dz.size else sigma + c.u * units
            if base_of(p) == "2":
                E = E / LN2 + 3 * c.u * (np.abs(m) + np.abs(m + log_s)) / LN2
        return np.where(dead | ~np.isfinite(E), 0.0, E)

    return {"softmax_lse": k_softmax_lse}
