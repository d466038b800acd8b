"""layernorm: y = (x - mean) / sqrt(var + eps) * w + b per row, var biased (divide by N), eps inside the root.

Semantics = torch.nn.functional.layer_norm: any inf or NaN in a row gives a NaN row (inf - inf).

Accumulation (float64), built for rows with mean >> std (e.g. 1000 +- 1): mean1 = fsum(x)/N; d = x - mean1;
a correction c = fsum(d)/N; deviations t = d - c. The error of t is u|d| + Ec + u|t| with
Ec ~ u mean|d| + 2u|c|, i.e. it scales with the spread of the row, not with |mean|. var = fsum(t*t)/N
is bounded through sum(2|t| Et + Et**2) plus the roundings of t*t and of the sum. Rows of float64 inputs
with max|x| > 2**500 are scaled by an exact power of two first. Final bound:
|y - y_true| <= Et r |w| + |t r w| (rho + 2u) + u |y|, rho the relative bound on r = 1/sqrt(var + eps).
Cancellation in "+ b" leaves a bound that is large relative to y: those elements get recomputed.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import SLACK, SUB, TINY, U, as_f64, mpf_rows, row_scale, rows_of, rowsum


def float64(inputs: dict, params: dict):
    """(values, bounds): {'y': layernorm in float64}, {'y': absolute error bound}."""
    x = as_f64(inputs["x"])
    w = as_f64(inputs["w"])
    bias = as_f64(inputs["b"])
    eps = float(params["eps"])
    M, N = x.shape
    k = row_scale(x)
    with np.errstate(all="ignore"):
        xs = np.ldexp(x, -k[:, None])
        mu1 = rowsum(xs)[0] / N
        d = xs - mu1[:, None]
        sd, sd_err = rowsum(d)
        c = sd / N
        mean_ad = np.mean(np.abs(d), axis=1)
        # error of c: rounding of each d, of the sum, of the division; SUB for underflowed xs
        Ec = ((U * mean_ad + sd_err / N + U * np.abs(c)) * SLACK + 2 * SUB)
        t = d - c[:, None]
        Et = (U * np.abs(d) + U * np.abs(t)) * SLACK + Ec[:, None]
        V, V_err = rowsum(t * t)
        var = V / N
        var_err = (np.sum(Et * (2 * np.abs(t) + Et), axis=1) + U * V + V_err) / N + U * var + SUB
        q = var + np.ldexp(eps, -2 * k)
        q_err = (var_err + U * q + SUB) * SLACK
        r = 1.0 / np.sqrt(q)
        rho = (q_err / q) * 0.5 * SLACK + 2 * U
        z = (t * r[:, None]) * w
        y = z + bias
        rw = r[:, None] * np.abs(w)
        b = (Et * rw + np.abs(z) * (rho[:, None] + 2 * U) + U * np.abs(y)) * SLACK + TINY * (1 + rw)
    finite_in = np.all(np.isfinite(x), axis=1)[:, None] & np.isfinite(w)[None, :] & np.isfinite(bias)[None, :]
    b = np.where(finite_in, np.where(np.isfinite(y) & np.isfinite(b), b, np.inf), 0.0)
    if eps == 0:  # constant rows give 0 * inf = NaN: exact
        const = np.all(x == x[:, :1], axis=1)
        b[const] = 0.0
    return {"y": y}, {"y": b}


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'y': object array [len(rows), N] of mpf} evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])
    w = [mpmath.mpf(v) for v in as_f64(inputs["w"]).tolist()]
    bias = [mpmath.mpf(v) for v in as_f64(inputs["b"]).tolist()]
    M, N = x.shape
    rows = rows_of(rows, M)
    out = np.empty((len(rows), N), dtype=object)
    with mpmath.workdps(dps):
        eps = mpmath.mpf(float(params["eps"]))
        for i, xr in enumerate(mpf_rows(x, rows)):
            mu = mpmath.fsum(xr) / N
            t = [v - mu for v in xr]
            q = mpmath.fsum(ti * ti for ti in t) / N + eps
            r = mpmath.inf if q == 0 else 1 / mpmath.sqrt(q)
            out[i] = [(ti * r) * wi + bi for ti, wi, bi in zip(t, w, bias)]
    return {"y": out}
