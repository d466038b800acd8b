"""online_softmax_stats: x[M,N] -> m[M], l[M]: the row max and sum(exp(x - m)) of an online softmax."""
from __future__ import annotations

import dataclasses

import numpy as np

from verifier.numerics.errmodel import gamma, mul
from verifier.numerics.violations import f64, round_out, ulp_out, violation
from verifier.ops.model import Op
from verifier.ops.softmax import softmax_parts, softmax_units


def k_online_l(x, l, p, c, xs):
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        w = np.exp(x - np.max(x, axis=-1, keepdims=True)) / l[..., None]
    online = dataclasses.replace(c, online=True)  # rescaling is what this op does
    _, _, _, s_units = softmax_parts(x, online, weights=w)
    return mul(gamma(s_units[..., 0], c.u), np.abs(l)) + c.N * c.eta


def k_exact(x, y, p, c, xs):
    return np.zeros_like(y)


def check_online_stats(x, m_out, l_out, c):
    bad_in = np.isnan(x).any(axis=1) | (x == np.inf).any(axis=1)
    out = []
    # m is a max: exact in any order; the only rounding is storing it in the output dtype.
    mx = np.max(np.where(bad_in[:, None], 0.0, x), axis=1)
    mx_out = f64(round_out(mx, c.out))
    wrong = ~bad_in & ~((m_out == mx_out) | (np.isnan(m_out) & np.isnan(mx_out)))
    out += violation("online_softmax_stats.max", wrong, m_out, mx_out, "m == max(x) exactly")
    # l = sum_j exp(x_j - m) over the n non-masked elements. The max term is exp(0) = 1 exactly and
    # the rest are >= 0, so l >= 1 (rounding is monotone). Each term exact <= 1, so l <= n·(1 +
    # gamma(s_units)) (the sum and rescale bound of the softmax), then stored: a stored l whose
    # predecessor (>= l - U/2) already reaches that is wrong.
    n = (x > -np.inf).sum(axis=1)
    live = ~bad_in & (n > 0)
    _, _, s_units = softmax_units(np.where(live[:, None], x, 0.0), n, c)
    upper = n * (1 + gamma(s_units + c.intr.exp, c.u)) + n * c.eta
    U = ulp_out(l_out, c)
    with np.errstate(invalid="ignore"):
        bad = live & ~((l_out >= 1) & (l_out - U / 2 < upper))
    out += violation("online_softmax_stats.l_range", bad, l_out, np.where(l_out < 1, 1.0, upper),
                     "1 <= l <= n (n = non-masked elements; value = l)")
    return out


OPDEF = Op(
    "online_softmax_stats", inputs={"x": "MxN"}, outputs={"m": "M", "l": "M"}, reference="references.online_softmax",
    # m is a max, exact, rounded exactly like the reference: base 0, no error term.
    recipe={"m": (0.0, "exact"), "l": (1.0, "online_l")}, kappas={"exact": k_exact, "online_l": k_online_l},
    exp_family=True,
    invariants=lambda x_raw, inp, ys, p, dt, c: check_online_stats(inp["x"], ys["m"], ys["l"], c),
)
