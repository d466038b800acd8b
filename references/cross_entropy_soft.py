"""cross_entropy_soft: cross entropy against a target distribution per row (soft labels), target[M,N] in the logits'
dtype: loss = sum_j t_j·(-log p_j) = sum_j t_j·(lse - x_j), PyTorch's F.cross_entropy(x, target, reduction='none')
with class-probability targets (no ignore_index; the target is taken as given, not renormalized). Variants as
cross_entropy: ``scale`` and ``softcap`` first, ``label_smoothing`` e mixes the target with the uniform distribution, (1 - e)·t +
e/N, and ``z_loss`` adds z·lse².

A class of target 0 whose logit is -inf (p_j = 0): ``zero_target='zero'`` (default) takes 0·log 0 = 0, the
convention of entropies and of a masked vocabulary; ``'nan'`` is PyTorch's arithmetic, 0·(-inf) = NaN, which a
kernel computing t·log_softmax declares. A positive target at a -inf logit gives +inf.

float64 bound: each term t_j·(lse - x_j) errs by |t_j|·(error of lse + 2u(|x_j - m| + log S)), their sum by
N·u·sum|terms|, the variants as references.cross_entropy.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import C_LOG, SLACK, TINY, U, as_f64, mpf_rows, rows_of
from references.cross_entropy import _capped, mp_transformed
from references.softmax import exp_stage, mp_row
from verifier.errors import UsageError

ZERO_TARGET = ("zero", "nan")


def check_inputs(inputs: dict, params: dict) -> None:
    if params.get("zero_target") not in ZERO_TARGET:
        raise UsageError(f"cross_entropy_soft: zero_target {params.get('zero_target')!r}",
                         fix="use 'zero' (0·log 0 = 0) or 'nan' (PyTorch's 0·(-inf) = NaN)")


def _terms(t, nlp, params):
    with np.errstate(invalid="ignore"):
        terms = t * nlp
    if params["zero_target"] == "zero":
        terms = np.where(t == 0, 0.0, terms)
    return terms


def float64(inputs: dict, params: dict):
    x, t = as_f64(inputs["x"]), as_f64(inputs["target"])
    xc, xerr = _capped(x, params)
    eps, zc = float(params["label_smoothing"]), float(params["z_loss"])
    N = x.shape[1]
    m, d, e, S, sigma, special = exp_stage(xc)
    with np.errstate(all="ignore"):
        L = np.log(S)
        lerr = sigma * (1 + sigma) + C_LOG * U * np.abs(L) + (np.max(xerr, axis=1) if np.ndim(xerr) else 0.0)
        nlp = L[:, None] - d  # -log p_j
        tt = (1 - eps) * t + eps / N if eps > 0 else t
        terms = _terms(tt, nlp, params)
        loss = np.sum(terms, axis=1)
        b = np.sum(np.abs(tt) * (lerr[:, None] + 2 * U * (np.abs(d) + np.abs(L)[:, None]) + xerr), axis=1) \
            + N * U * np.sum(np.abs(terms), axis=1) * SLACK
        if zc > 0:
            lse = m + L
            le = lerr + U * np.abs(lse)
            loss = loss + zc * lse * lse
            b = b + zc * (2 * np.abs(lse) * le + le * le) + 3 * U * zc * lse * lse + U * np.abs(loss)
        b = (b + TINY) * SLACK
    loss = np.where(special, np.nan, loss)
    b[special | ~np.isfinite(loss)] = 0.0
    return {"loss": loss}, {"loss": b}


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    x, t = as_f64(inputs["x"]), as_f64(inputs["target"])
    rows = rows_of(rows, x.shape[0])
    out = np.empty(len(rows), dtype=object)
    eps, zc = mpmath.mpf(float(params["label_smoothing"])), mpmath.mpf(float(params["z_loss"]))
    with mpmath.workdps(dps):
        for i, (r, xr) in enumerate(zip(rows, mpf_rows(x, rows))):
            xr = mp_transformed(xr, params)
            st = mp_row(xr)
            if st is None:
                out[i] = mpmath.nan
                continue
            lse = st[0] + mpmath.log(st[2])
            N = len(xr)
            loss = []
            for tj, xj in zip(t[r].tolist(), xr):
                tj = mpmath.mpf(tj)
                if eps > 0:
                    tj = (1 - eps) * tj + eps / N
                if tj == 0 and params["zero_target"] == "zero":
                    continue
                loss.append(mpmath.nan if (tj == 0 and mpmath.isinf(xj)) else tj * (lse - xj))
            total = mpmath.fsum(loss) if loss else mpmath.mpf(0)
            out[i] = total + zc * lse * lse if zc > 0 else total
    return {"loss": out}
