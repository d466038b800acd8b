"""rmsnorm: y = x / sqrt(mean(x**2) + eps) * (offset + w) per row (eps inside the root), torch semantics;
offset = 0 is the usual form, offset = 1 the Gemma one (weights stored as w - 1).

Semantics = torch.nn.functional.rms_norm, i.e. the formula in IEEE arithmetic: a zero row gives 0 when
eps > 0 and NaN when eps == 0 (0 * inf); a NaN in a row gives a NaN row; an inf in a row makes the root
inf, so finite entries give 0 and the inf entries NaN.

Accumulation (float64): for inputs of <= 26 significant bits (float32 and narrower, int8) every x*x is
exact in float64 and the only error of sum(x**2) is math.fsum's final rounding (u relative); float64/
int32 inputs add u per square. Rows of float64 inputs with max|x| > 2**500 are scaled by an exact power of
two first, so x*x cannot overflow. Then mean, + eps, sqrt, 1/. and two products add a few u:
|y - y_true| <= |y| (q_err / (2 q) + 4u) + slack, q = mean + eps, q_err the bound on q.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import SLACK, SUB, TINY, U, as_f64, mpf_rows, row_scale, rows_of, rowsum, squares_exact


def weights(inputs: dict, params: dict):
    """(offset + w in float64, its relative rounding error): exact for offset 0, within u otherwise."""
    w = as_f64(inputs["w"])
    off = float(params.get("offset", 0.0))
    with np.errstate(all="ignore"):
        return (w + off, U) if off else (w, 0.0)


def mp_weights(inputs: dict, params: dict) -> list:
    """offset + w as mpf values (exact: call inside a workdps context of enough digits)."""
    off = mpmath.mpf(float(params.get("offset", 0.0)))
    return [mpmath.mpf(v) + off for v in as_f64(inputs["w"]).tolist()]


def core(x: np.ndarray, x_err: np.ndarray, w: np.ndarray, eps: float, sq_exact: bool, w_rel: float = 0.0):
    """y and its absolute bound for float64 rows x known to within x_err (elementwise, absolute); the weights
    ``w`` known to within ``w_rel`` relatively."""
    M, N = x.shape
    k = row_scale(x)
    with np.errstate(all="ignore"):
        xs = np.ldexp(x, -k[:, None])
        es = np.ldexp(x_err, -k[:, None])
        ss, ss_err = rowsum(xs * xs)
        # squares: rounding (unless exact), underflow, and the error of x itself
        sq_err = (0.0 if sq_exact else U * ss) + N * SUB + np.sum(es * (2 * np.abs(xs) + es), axis=1)
        ms = ss / N
        q = ms + np.ldexp(eps, -2 * k)
        q_err = ((ss_err + sq_err) / N + U * ms + U * q + SUB) * SLACK
        r = 1.0 / np.sqrt(q)
        rho = (q_err / q) * 0.5 * SLACK + 2 * U
        y = (xs * r[:, None]) * w
        rw = r[:, None] * np.abs(w)
        b = ((np.abs(y) * (rho[:, None] + 2 * U + w_rel) + es * rw) * SLACK + TINY * (1 + rw))
    finite_in = np.all(np.isfinite(x), axis=1)[:, None] & np.isfinite(w)[None, :]
    # Non-finite inputs: the IEEE value is the semantics (exact). Finite inputs but a non-finite value or
    # bound (eps == 0 with an underflowed sum, ...): untrusted, recompute.
    b = np.where(finite_in, np.where(np.isfinite(y) & np.isfinite(b), b, np.inf), 0.0)
    if eps == 0:  # a true zero row gives NaN under eps == 0: exact
        zero = np.all(x == 0, axis=1) & np.all(x_err == 0, axis=1)
        b[zero] = 0.0
    return y, b


def float64(inputs: dict, params: dict):
    """(values, bounds): {'y': rmsnorm in float64}, {'y': absolute error bound}."""
    x = as_f64(inputs["x"])
    w, w_rel = weights(inputs, params)
    y, b = core(x, np.zeros_like(x), w, float(params["eps"]), squares_exact(inputs["x"]), w_rel)
    return {"y": y}, {"y": b}


def mp_rows(xrows: list, w: list, eps, N: int) -> list:
    """rmsnorm of rows of mpf values (call inside a workdps context)."""
    out = []
    for xr in xrows:
        q = mpmath.fsum(v * v for v in xr) / N + eps
        r = mpmath.inf if q == 0 else 1 / mpmath.sqrt(q)
        out.append([(v * r) * wi for v, wi in zip(xr, w)])
    return out


def mp(inputs: dict, params: dict, rows=None, dps: int = 60) -> dict:
    """{'y': object array [len(rows), N] of mpf} evaluated at ``dps`` digits."""
    x = as_f64(inputs["x"])
    rows = rows_of(rows, x.shape[0])
    out = np.empty((len(rows), x.shape[1]), dtype=object)
    with mpmath.workdps(dps):
        w = mp_weights(inputs, params)
        for i, yr in enumerate(mp_rows(mpf_rows(x, rows), w, mpmath.mpf(float(params["eps"])), x.shape[1])):
            out[i] = yr
    return {"y": out}
