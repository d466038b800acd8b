"""softmax: x[M,N] -> y[M,N], y = exp(x - max) / sum(exp(x - max)) per row.

Also the softmax family's shared error pieces (exp terms and the row sum), used by log_softmax,
online_softmax_stats and cross_entropy.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from verifier.numerics.errmodel import gamma, mul
from verifier.numerics.violations import U64, finite_violation, order_violation, ulp_out, violation
from verifier.ops import softmax_lse
from verifier.ops.model import Op
from verifier.ops.softmax_inputs import (CASES, MASKED_ROWS, OPTIONAL, PARAMS, fully_masked, logit_error, logits,
                                         with_sink)

# --------------------------------------------------------------------------- error budget (tolerance)

def softmax_parts(x, c, *, weights):
    """Relative error units of each exp term and of the row sum (shared by the softmax family).

    The kernel computes e_j = exp(fl(x_j - m)): the subtraction errs by u|x_j - m| absolutely,
    which exp turns into a relative error |x_j - m|·u; plus the intrinsic's own error. The sum of
    N positive terms in any order errs by at most gamma(N-1) relatively, and inherits the terms'
    errors weighted by their share y_j = e_j / s of the sum.
    """
    m = np.max(x, axis=-1, keepdims=True)
    d = np.abs(x - m)
    e_units = d * (1.0 + c.intr.exp_arg) + c.intr.exp + c.c_in * (np.abs(x) + np.abs(m))
    with np.errstate(invalid="ignore"):
        s_units = np.sum(mul(e_units, weights), axis=-1, keepdims=True) + (c.N - 1)
    if c.online:
        # each running-sum rescale by exp(m_old - m_new) costs one exp and one multiply; at most
        # N-1 rescales (every new element a new maximum). Their argument errors telescope into d.
        s_units = s_units + (c.N - 1) * (c.intr.exp + 1.0)
    return m, d, e_units, s_units


def row_softmax(x):
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=-1, keepdims=True)
        e = np.exp(x - m)
        return e / np.sum(e, axis=-1, keepdims=True)


def logit_units(x, p, c, xs):
    """(z with its sink column, the kernel's error in z in units of u per element plus the row's largest, the
    rows with no live logit): the softmax family's extra inputs (verifier.ops.softmax_inputs). A logit off by
    dz_j moves log p_j by at most dz_j + max_k dz_k (the max and the sum see every logit)."""
    ins = {**xs, "x": x}
    z = logits(ins, p)
    dz = logit_error(ins, p, c) / c.u if c.u > 0 else np.zeros_like(z)
    dz = dz + np.max(dz, axis=-1, keepdims=True) if dz.size else dz
    return with_sink(z, ins), dz, fully_masked(z, ins)


def k_softmax(x, y, p, c, xs):
    z, dz, dead = logit_units(x, p, c, xs)
    N = x.shape[-1]
    cz = dataclasses.replace(c, N=z.shape[-1])  # a sink is one more term of the sum
    _, _, e_units, s_units = softmax_parts(z, cz, weights=row_softmax(z) if z.shape != y.shape else y)
    k = e_units[..., :N] + s_units + c.intr.div + dz
    # two operations may underflow (exp, then the division): each errs by at most eta.
    E = mul(gamma(k, c.u), np.abs(y)) + 2 * c.eta
    return np.where(dead[:, None], 0.0, E)  # no live logit: NaN or exact zeros, as the kernel declares


# --------------------------------------------------------------------------- invariants

def softmax_units(x, live_n, c):
    """Relative error units of each exp term (e_units, per element) and of the row sum (s_units).

    e_j = exp(fl(x_j - m)): the subtraction errs by u|x_j - m| absolutely, which exp turns into a
    relative u|x_j - m|, plus the intrinsic's exp + exp_arg·|x_j - m|. The sum of n positive terms
    errs by gamma(n - 1) in any order and inherits the terms' errors (bounded by their maximum);
    an online kernel rescales its running sum at most n - 1 times, each costing one exp and one
    product (the rescale arguments telescope to the row's range, already inside max e_units).
    Masked (-inf) elements contribute exactly 0 and carry no error.
    """
    fin = np.isfinite(x)
    m = np.max(np.where(fin, x, -np.inf), axis=1, keepdims=True)
    d = np.where(fin, np.abs(x - m), 0.0)
    e_units = np.where(fin, d * (1.0 + c.intr.exp_arg) + c.intr.exp, 0.0)
    s_units = e_units.max(axis=1) + (live_n - 1)
    if c.online:
        s_units = s_units + (live_n - 1) * (c.intr.exp + 1.0)
    return m, e_units, s_units


def softmax_rows(x, y):
    """Rows the bound checks apply to. NaN / +inf in the input: the output is NaN (compare's
    nan-inf check judges it). Fully masked rows (all -inf): skipped here on purpose, the output
    must be all-NaN and that is compare's job, not a sum invariant."""
    bad_in = np.isnan(x).any(axis=1) | (x == np.inf).any(axis=1)
    masked = (x == -np.inf).all(axis=1)
    live = ~bad_in & ~masked
    return live, live & np.isfinite(y).all(axis=1)


# why softmax_rows' live rows must be finite (a row may hold -inf: masked columns)
LIVE_ROWS = "they hold no NaN or +inf and at least one logit above -inf (-inf ones are masked columns)"


def check_softmax(x, y, c, dz=0.0):
    """``dz``: the kernel's error in the logits x in units of u (softmax_inputs), which widens each element's
    relative bound g (the order check sees it: two logits that close may swap)."""
    live, ok = softmax_rows(x, y)
    out = finite_violation("softmax.finite", live, y, LIVE_ROWS)
    n = (x > -np.inf).sum(axis=1)
    _, e_units, s_units = softmax_units(np.where(ok[:, None], x, 0.0), n, c)
    # Per element: the kernel's pre-rounding value v_j = p_j(1 + theta_j), |theta_j| <= g_j with
    # g_j = gamma(e_units_j + s_units + div); two ops may underflow (exp, division): 2·eta. The
    # stored y_j = v_j ± ulp_out(y_j). Hence p_j <= (y_j + U_j)/(1 - g_j) and
    #   |y_j - p_j| <= U_j + g_j·p_j + 2·eta =: err_j.
    # Sum: sum_j p_j = 1 exactly, so |sum_j y_j - 1| <= sum_j err_j (+ float64 summation here).
    g = gamma(e_units + s_units[:, None] + c.intr.div + dz, c.u)
    g = np.where(x == -np.inf, 0.0, g)  # p_j = 0 exactly; any y_j there shows up in the sum itself
    U = ulp_out(y, c)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        p_hi = np.where(g < 1, (np.abs(y) + U) / (1 - g), np.inf)
        err = U + g * p_hi + 2 * c.eta
        total = y.sum(axis=1)
        dev = np.abs(total - 1.0)
        bound = err.sum(axis=1) + y.shape[1] * U64 * np.abs(y).sum(axis=1)
    out += violation("softmax.sum", ok & ~(dev <= bound), dev, bound, "sum(y) == 1 (value = |sum(y) - 1|)")
    # Range: p_j in [0, 1]; every operation keeps signs, so y_j >= 0 exactly (-0 allowed). Above:
    # v_j <= 1 + g_j, and rounding up cannot pass the first output value >= 1 + g_j, so y_j is wrong
    # when its predecessor (>= y_j - U_j/2) already reaches 1 + g_j, i.e. y_j - 1 >= g_j + U_j/2.
    dist = np.where(y > 1, y - 1, np.where(y < 0, -y, 0.0))
    allowed = np.where(y > 1, g + U / 2, 0.0)
    excess = np.where(ok[:, None] & (dist > 0), dist - allowed, -np.inf)
    excess = np.where((y > 1) & (excess == 0), np.finfo(np.float64).tiny, excess)  # '>=' above 1
    j = np.argmax(excess, axis=1)[:, None]
    pick = lambda a: np.take_along_axis(a, j, 1)[:, 0]  # noqa: E731
    out += violation("softmax.range", pick(excess) > 0, pick(dist), pick(allowed),
                     "0 <= y <= 1 (value = distance of y outside [0, 1])")
    out += order_violation("softmax.order", ok, np.where(ok[:, None], x, 0.0), y, err)
    return out


def invariants(x_raw, inp, ys, p, dt, c):
    """softmax's invariants on the logits z (x itself with every default). With sinks the row sums to 1 - p_sink:
    the sink's probability joins y as one more column, from the sum (its own bound is the sum's)."""
    z, dz, _ = logit_units(inp["x"], p, c, inp)
    if z.shape != ys["y"].shape:  # sinks: the invariants need p_sink, which only the sum gives; order and range
        n = ys["y"].shape[1]
        return [v for v in check_softmax(z[:, :n], ys["y"], c, dz) if v.invariant != "softmax.sum"]
    return check_softmax(z, ys["y"], c, dz)


OPDEF = Op(
    "softmax", inputs={"x": "MxN", **OPTIONAL}, outputs={"y": "MxN", **softmax_lse.OUTPUTS},
    reference="references.softmax", params={**PARAMS, "masked_rows": None, **softmax_lse.PARAMS},
    contract_params={"masked_rows": MASKED_ROWS, **softmax_lse.CONTRACTS},
    recipe={"y": (1.0, "softmax"), **softmax_lse.RECIPE},
    kappas={"softmax": k_softmax, **softmax_lse.kappas(logit_units, softmax_parts, row_softmax)},
    # The row sum held in the 16-bit I/O dtype (PyTorch's CPU log_softmax for f16/bf16 rounds the
    # sum to the I/O dtype): the same formula with u of that dtype; the intrinsic constants stay the
    # fp32 ones (in units of the larger u they only over-count).
    extra_tolerances=(("float16", "float16", None), ("bfloat16", "bfloat16", None)),
    online_override=True, exp_family=True,
    invariants=invariants, cases=CASES,
)
