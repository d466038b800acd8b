"""log_softmax: x[M,N] -> y[M,N], y = (x - max) - log(sum(exp(x - max))) per row."""
from __future__ import annotations

import dataclasses

import numpy as np

from verifier import dtypes as _dt
from verifier.numerics.errmodel import gamma
from verifier.numerics.ulp import round_to
from verifier.numerics.violations import U64, Violation, finite_violation, order_violation, ulp_out, violation
from verifier.ops import softmax_lse
from verifier.ops.model import OpCase, Op
from verifier.ops.softmax import LIVE_ROWS, logit_units, row_softmax, softmax_parts, softmax_rows, softmax_units
from verifier.ops.softmax_inputs import CASES as MASK_CASES
from verifier.ops.softmax_inputs import MASKED_ROWS, OPTIONAL, PARAMS


def k_log_softmax(x, y, p, c, xs):
    # The logits z of the extra inputs (x itself by default): their error dz·u moves y_j by at most
    # dz_j + max dz (logit_units); a sink is one more term of s.
    z, dz, dead = logit_units(x, p, c, xs)
    E = _k_log_softmax(z, y, dataclasses.replace(c, N=z.shape[-1])) + c.u * dz
    return np.where(dead[:, None], 0.0, E)


def _k_log_softmax(x, y, c):
    # y = (x - m) - log(s). Absolute error: the subtraction u|x - m|; log(s(1+σ)) = log s + σ,
    # σ = gamma(sum units); the log intrinsic; the final subtraction u|y|; kernels computing
    # x - (m + log s) round m + log s once more: u|m + log s|. Underflowed exp terms lose at most
    # N·eta of s >= 1.
    w = row_softmax(x)
    m, d, _, s_units = softmax_parts(x, c, weights=w)
    with np.errstate(over="ignore", invalid="ignore"):
        log_s = np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))
    n = y.shape[-1]
    sigma = gamma(s_units, c.u) + c.N * c.eta
    units = (d[..., :n] + c.c_in * (np.abs(x[..., :n]) + np.abs(m)) + c.intr.log_abs
             + c.intr.log_rel * np.abs(log_s) + np.abs(y) + np.abs(m + log_s))
    return sigma + c.u * units


def check_log_softmax(x, y, c, dz=0.0):
    live, _ = softmax_rows(x, y)
    # -inf is the correct log-probability of a masked element; everything else must be finite.
    fin_where = np.where(x == -np.inf, 0.0, y)
    out = finite_violation("log_softmax.finite", live, fin_where, LIVE_ROWS + ", and -inf is due only there")
    ok = live & np.isfinite(fin_where).all(axis=1) & ~np.isnan(y).any(axis=1)
    xs = np.where(ok[:, None], x, 0.0)
    n = (x > -np.inf).sum(axis=1)
    m, _, s_units = softmax_units(xs, n, c)
    fin = np.isfinite(xs)
    d = np.where(fin, np.abs(xs - m), 0.0)
    # y_j = (x_j - m) - log s. Absolute error before output rounding (first order, gamma for the
    # sum): subtraction u·|x_j - m|; log(s(1 + sigma)) = log s + sigma with sigma = gamma(s_units);
    # the log intrinsic (log_abs + log_rel·log n)·u, log s <= log n; final subtraction u·|y_j|;
    # an x - (m + log s) ordering rounds m + log s once more: u·(|m| + log n). Underflowed exp
    # terms lose at most n·eta of s >= 1. Plus the output rounding U_j: D_j bounds |y_j - log p_j|.
    logn = np.log(np.maximum(n, 1))[:, None]
    sigma = gamma(s_units, c.u)[:, None] + n[:, None] * c.eta
    yf = np.where(fin, y, 0.0)
    D = (sigma + c.u * (d + c.intr.log_abs + c.intr.log_rel * logn + np.abs(yf) + np.abs(m) + logn)
         + ulp_out(yf, c) + c.u * dz)
    D = np.where(fin, D, 0.0)
    # sum_j p_j = 1 and exp(y_j) = p_j·exp(y_j - log p_j), so |sum_j exp(y_j) - 1| <=
    # sum_j p_j·(exp(D_j) - 1) <= sum_j exp(y_j + D_j)·expm1(D_j).
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.where(fin, np.exp(y), 0.0).sum(axis=1)
        bound = np.where(fin, np.exp(yf + D) * np.expm1(D), 0.0).sum(axis=1) + y.shape[1] * U64 * s
        dev = np.abs(s - 1.0)
        lse = np.log(s)
    bad = ok & ~(dev <= bound)
    out += violation("log_softmax.logsumexp", bad, dev, bound,
                     "logsumexp(y) == 0 (value = |sum(exp(y)) - 1|)")
    if bad.any():
        w = out[-1]
        out[-1] = Violation(w.invariant, w.rows, w.message + f"; logsumexp(y) of the worst rows: "
                            f"{np.round(lse[w.rows[:4]], 6).tolist()}", w.score)
    # y <= 0: log p <= 0, and both x_j - m <= 0 (rounding is monotone) and log s >= 0 (s >= 1 since
    # exp(0) = 1 is exact) hold in any mode except for the log intrinsic's absolute error log_abs·u.
    lim = c.intr.log_abs * c.u
    pos = np.where(ok[:, None] & fin, y, -np.inf).max(axis=1)
    out += violation("log_softmax.nonpositive", ok & (pos > lim), pos, np.full_like(pos, lim) + 0.0,
                     f"y <= 0 (+{lim:.3g} for the log intrinsic's absolute error; value = max y)")
    out += order_violation("log_softmax.order", ok, np.where(ok[:, None], x, 0.0), np.where(fin, y, -np.inf),
                           np.where(fin, D, 0.0))
    return out


# --------------------------------------------------------------------------- inputs: log-domain extremes

def wide_rows(rng, scale: float = 50.0):
    """N(0, scale²) rows: with scale 50 a row spans far more than 104, where exp(x - max) underflows to 0 in
    float32, so log(exp(x - m) / s) gives -inf where the exact log-probability is finite (about -300)."""
    def fn(shape, dtype):
        with np.errstate(invalid="ignore", over="ignore"):
            return round_to(scale * rng.standard_normal(shape), dtype).astype(np.float64)
    return fn


def one_high_logit(rng, lift: float = 200.0):
    """N(0, 1) rows with one element raised by ``lift``: every other log-probability is about -200, past exp's
    range, and the raised one holds almost all the mass (log p ~ -N·e^-200, an exact 0 in any dtype)."""
    def fn(shape, dtype):
        v = rng.standard_normal(shape)
        v[np.arange(shape[0]), rng.integers(shape[1], size=shape[0])] += lift
        with np.errstate(invalid="ignore", over="ignore"):
            return round_to(v, dtype).astype(np.float64)
    return fn


def holds(v: float):
    """Input dtypes whose finite range reaches ``v``."""
    return lambda dt: _dt.is_float(dt) and float(_dt.finfo(dt).max) >= v


CASES = (
    OpCase("ls_wide_rows_randn50", "rows of randn·50 (spanning far past 104): exponentiate-then-log "
           "(log(exp(x - m) / s)) gives -inf where the answer is finite", 4, 1000, wide_rows, dtype_ok=holds(400.0)),
    OpCase("ls_one_logit_200_above", "one logit 200 above the rest: the others' log-probabilities (about -200) are "
           "past exp's range, finite only if computed as (x - m) - log(s)", 4, 1000, one_high_logit,
           dtype_ok=holds(210.0)),
)

def invariants(x_raw, inp, ys, p, dt, c):
    """On the logits z (x itself with every default); with sinks logsumexp(y) = log(1 - p_sink), which only the
    sum gives: the order and sign checks stay."""
    z, dz, _ = logit_units(inp["x"], p, c, inp)
    n = ys["y"].shape[1]
    out = check_log_softmax(z[:, :n], ys["y"], c, dz[:, :n] if np.ndim(dz) else dz)
    return [v for v in out if v.invariant != "log_softmax.logsumexp"] if z.shape[1] != n else out


OPDEF = Op(
    "log_softmax", inputs={"x": "MxN", **OPTIONAL}, outputs={"y": "MxN", **softmax_lse.OUTPUTS},
    reference="references.log_softmax", params={**PARAMS, "masked_rows": None, **softmax_lse.PARAMS},
    contract_params={"masked_rows": MASKED_ROWS, **softmax_lse.CONTRACTS},
    recipe={"y": (1.0, "log_softmax"), **softmax_lse.RECIPE},
    kappas={"log_softmax": k_log_softmax, **softmax_lse.kappas(logit_units, softmax_parts, row_softmax)},
    extra_tolerances=(("float16", "float16", None), ("bfloat16", "bfloat16", None)),  # as softmax
    online_override=True, exp_family=True,
    invariants=invariants, cases=CASES + MASK_CASES,
)
