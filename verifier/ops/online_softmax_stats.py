"""online_softmax_stats: x[M,N] -> m[M], l[M]: the row max and sum(exp(x - m)) of an online softmax."""
from __future__ import annotations

import dataclasses

import numpy as np

from verifier.numerics.errmodel import gamma, mul
from verifier.numerics.violations import f64, round_out, ulp_out, violation
from verifier.ops.model import Op
from verifier.ops.softmax import logit_units, softmax_parts, softmax_units
from verifier.ops.softmax_inputs import CASES, OPTIONAL, PARAMS


def k_online_l(x, l, p, c, xs):
    # On the logits z (x by default; a sink is one more term): a logit off by dz·u moves each term by dz_j + max dz
    # relatively (the max shifts by at most max dz), so l by at most that much more.
    z, dz, dead = logit_units(x, p, c, xs)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        w = np.exp(z - np.max(z, axis=-1, keepdims=True)) / l[..., None]
    online = dataclasses.replace(c, online=True, N=z.shape[-1])  # rescaling is what this op does
    _, _, _, s_units = softmax_parts(z, online, weights=w)
    E = mul(gamma(s_units[..., 0] + np.max(dz, axis=-1), c.u), np.abs(l)) + c.N * c.eta
    return np.where(dead, 0.0, E)  # no live logit: the empty partial (m = -inf, l = 0), exact


def k_exact(x, y, p, c, xs):
    # m = max z: exact for x itself; with the extra inputs the max of the kernel's rounded logits, off by dz·u.
    z, dz, dead = logit_units(x, p, c, xs)
    return np.where(dead, 0.0, c.u * np.max(dz, axis=-1)) if np.any(dz) else np.zeros_like(y)


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


def invariants(x_raw, inp, ys, p, dt, c):
    """On the logits z (x itself with every default); with a sink, m >= sink and l counts its term: the checks
    need the exact z, so they stay to the defaults and the mask (scale, softcap and ALiBi move m off max(x))."""
    z, dz, _ = logit_units(inp["x"], p, c, inp)
    if z.shape[1] != inp["x"].shape[1] or np.any(dz):
        return []
    return check_online_stats(z, ys["m"], ys["l"], c)


OPDEF = Op(
    "online_softmax_stats", inputs={"x": "MxN", **OPTIONAL}, outputs={"m": "M", "l": "M"},
    reference="references.online_softmax", params=dict(PARAMS), cases=CASES,
    # m is a max, exact, rounded exactly like the reference: base 0, no error term.
    recipe={"m": (0.0, "exact"), "l": (1.0, "online_l")}, kappas={"exact": k_exact, "online_l": k_online_l},
    exp_family=True,
    invariants=invariants,
)
