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

Variants (params; the defaults give the plain loss above): ``scale`` s multiplies the logits first (flash-attn's
logit_scale, Unsloth's logit_scaling), ``softcap`` c > 0 then caps them, x' = c·tanh(x·s/c) (Gemma 2); ``label_smoothing`` e (PyTorch): loss = (1 - e)·nll + e·mean_j(-log p_j), the mean over all N classes, so
a -inf logit anywhere in the row makes it +inf as in PyTorch; ``z_loss`` z (PaLM, Liger): + z·lse² per row. Each
adds its float64 error to the bound (the mean of the row: gamma(N)·mean|x - m|; lse²: 2|lse|·its error).
cross_entropy_reduced sums these per-row losses over the non-ignored rows (``reduction='sum'``) or takes their
mean (``'mean'``: divided by the count of non-ignored rows, NaN when there is none, as PyTorch).
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import C_LOG, SLACK, TINY, U, as_f64, mpf_rows, rows_of
from references.softmax import exp_stage, mp_row
from verifier.errors import UsageError
from verifier.ops.ce_labels import ignored_rows, logit_scale, smoothing


def _labels(inputs: dict, params: dict):
    t = np.asarray(inputs["labels"]).astype(np.int64)
    ignored = ignored_rows(t, params)
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
                         fix=f"use class indices 0..{N - 1}" + ("" if params.get("ignore_index", -100) is None else
                                                                 f", or ignore_index={params['ignore_index']} to skip a row"))


def _capped(x: np.ndarray, params: dict) -> tuple:
    """(x', its float64 error): the logits after the scale (x·scale) and the softcap (cap·tanh(x·scale/cap)), or x
    itself with neither."""
    scale = logit_scale(params)
    cap = float(params.get("softcap", 0.0) or 0.0)
    if cap <= 0 and scale == 1.0:
        return x, 0.0
    with np.errstate(all="ignore"):
        xs = x * scale if scale != 1.0 else x
        serr = np.where(np.isfinite(xs), U * np.abs(xs), 0.0) if scale != 1.0 else 0.0
        if cap <= 0:
            return xs, serr
        xc = cap * np.tanh(xs / cap)
        slope = np.where(np.isfinite(xs), np.abs(xs) / np.cosh(np.minimum(np.abs(xs / cap), 350.0)) ** 2, 0.0)
        return xc, 4 * U * (np.abs(xc) + slope) + serr


def mp_transformed(xr: list, params: dict) -> list:
    """A row of mpf logits after the scale and the softcap (±inf capped to ±cap, NaN kept)."""
    scale = logit_scale(params)
    if scale != 1.0:
        xr = [v * mpmath.mpf(scale) for v in xr]
    cap = mpmath.mpf(float(params.get("softcap", 0.0) or 0.0))
    if cap > 0:
        xr = [cap * mpmath.tanh(v / cap) if mpmath.isfinite(v) else (cap if v > 0 else -cap) if mpmath.isinf(v)
              else v for v in xr]
    return xr


def lse_float64(inputs: dict, params: dict):
    """(lse, bound) per row: logsumexp of the (scaled, capped) logits, every row (ignored ones too); NaN where the
    loss is (a NaN or +inf logit, or every logit -inf), as m + log(sum exp(x - m)) gives there."""
    x = as_f64(inputs["x"])
    xc, xerr = _capped(x, params)
    m, _, _, S, sigma, special = exp_stage(xc)
    with np.errstate(all="ignore"):
        L = np.log(S)
        lse = m + L
        b = (sigma * (1 + sigma) + C_LOG * U * np.abs(L) + U * np.abs(lse) + TINY) * SLACK
        if np.ndim(xerr):
            b = b + np.max(xerr, axis=1) * SLACK
    lse = np.where(special, _special_lse(xc, params), lse)
    b[special | ~np.isfinite(lse)] = 0.0
    return lse, b


def _special_lse(xc: np.ndarray, params: dict):
    """A special row's lse: NaN (params lse_nonfinite 'nan', the default: m + log(sum exp(x - m)) there) or, for
    'inf', torch.logsumexp's: NaN with a NaN, +inf with a +inf, -inf when every logit is -inf."""
    if params.get("lse_nonfinite") != "inf":
        return np.nan
    with np.errstate(all="ignore"):
        return np.where(np.isnan(xc).any(axis=1), np.nan, np.where((xc == np.inf).any(axis=1), np.inf, -np.inf))


def rows_float64(inputs: dict, params: dict):
    """(loss, bound, ignored) per row, with the variants' params."""
    x = as_f64(inputs["x"])
    t, ignored = _labels(inputs, params)
    xc, xerr = _capped(x, params)
    eps = smoothing(params, x.shape[1])
    zc = float(params.get("z_loss", 0.0))
    m, d, e, S, sigma, special = exp_stage(xc)
    rows = np.arange(x.shape[0])
    N = x.shape[1]
    with np.errstate(all="ignore"):
        L = np.log(S)
        d_t = d[rows, t]
        loss = L - d_t
        lerr = sigma * (1 + sigma) + C_LOG * U * np.abs(L)
        b = U * np.abs(d_t) + lerr + U * np.abs(loss)
        if np.ndim(xerr):  # the capped logits' error moves lse and x'_t by at most the largest of it
            b = b + 2 * np.max(xerr, axis=1)
        if eps > 0:  # mean_j(-log p_j) = log S - mean_j(x'_j - m)
            md = np.sum(d, axis=1) / N
            smooth = L - md
            sb = lerr + N * U * np.mean(np.abs(d), axis=1) * SLACK + U * np.abs(smooth) \
                + (2 * np.max(xerr, axis=1) if np.ndim(xerr) else 0.0)
            loss = (1 - eps) * loss + eps * smooth
            b = (1 - eps) * b + eps * sb + 2 * U * np.abs(loss)
        if zc > 0:
            lse = m + L
            le = lerr + U * np.abs(lse) + (np.max(xerr, axis=1) if np.ndim(xerr) else 0.0)
            loss = loss + zc * lse * lse
            b = b + zc * (2 * np.abs(lse) * le + le * le) + 3 * U * zc * lse * lse + U * np.abs(loss)
        b = (b + TINY) * SLACK
    loss = np.where(special, np.nan, loss)
    b[special | ~np.isfinite(loss)] = 0.0  # NaN rows, and +inf where the label's logit is -inf
    loss[ignored] = 0.0
    b[ignored] = 0.0
    return loss, b, ignored


def float64(inputs: dict, params: dict):
    """(values, bounds): {'loss': loss in float64}, {'loss': absolute error bound}."""
    loss, b, ignored = rows_float64(inputs, params)
    values, bounds = {"loss": loss}, {"loss": b}
    if params.get("lse") or params.get("z_losses"):
        lse, lb = lse_float64(inputs, params)
        if params.get("lse"):
            values["lse"], bounds["lse"] = lse, lb
        if params.get("z_losses"):  # z·lse², 0 on ignored rows; lse's bound carried as the loss's z_loss term
            zc = float(params.get("z_loss", 0.0))
            with np.errstate(all="ignore"):
                zl = np.where(ignored, 0.0, zc * lse * lse)
                zb = np.where(ignored | ~np.isfinite(zl), 0.0, zc * (2 * np.abs(lse) * lb + lb * lb) + 3 * U * np.abs(zl))
            values["z_losses"], bounds["z_losses"] = zl, zb
    return values, bounds


def mp_loss(xr: list, t: int, params: dict):
    """One row's loss (mpf, at the working precision), the variants included; NaN for a special row."""
    xr = mp_transformed(xr, params)
    st = mp_row(xr)
    if st is None:
        return mpmath.nan
    m, _, S = st
    lse = m + mpmath.log(S)
    loss = lse - xr[t]
    eps = mpmath.mpf(float(params.get("label_smoothing", 0.0) or 0.0))
    if eps > 0 and params.get("smoothing_classes", "all") == "others":
        eps = eps * len(xr) / (len(xr) - 1) if len(xr) > 1 else mpmath.mpf(0)
    if eps > 0:
        loss = (1 - eps) * loss + eps * (lse - mpmath.fsum(xr) / len(xr))
    zc = mpmath.mpf(float(params.get("z_loss", 0.0)))
    if zc > 0:
        loss = loss + zc * lse * lse
    return loss


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'loss': object array [len(rows)] of mpf} evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])
    t, ignored = _labels(inputs, params)
    rows = rows_of(rows, x.shape[0])
    out = np.empty(len(rows), dtype=object)
    lse = np.empty(len(rows), dtype=object)
    with mpmath.workdps(dps):
        for i, (r, xr) in enumerate(zip(rows, mpf_rows(x, rows))):
            xt = mp_transformed(xr, params)
            st = mp_row(xt)
            lse[i] = st[0] + mpmath.log(st[2]) if st is not None else mpmath.mpf(
                float(_special_lse(np.array([[float(v) for v in xt]]), params)[()] if
                      params.get("lse_nonfinite") == "inf" else np.nan))
            out[i] = mpmath.mpf(0) if ignored[r] else mp_loss(xr, int(t[r]), params)
    got = {"loss": out}
    if params.get("lse"):
        got["lse"] = lse
    if params.get("z_losses"):
        zc = mpmath.mpf(float(params.get("z_loss", 0.0)))
        got["z_losses"] = np.array([mpmath.mpf(0) if ignored[r] else zc * v * v for r, v in zip(rows, lse)],
                                   dtype=object)
    return got
