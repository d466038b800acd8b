"""Reference-free invariants of correct outputs, checked per row.

``check(op, inputs, outputs, dtypes, params)`` returns one :class:`Violation` per broken invariant,
naming the offending rows, the worst row's value and its bound. Every bound is derived from the
standard rounding model, never tuned (derivations next to each check):

* u = unit roundoff of the accumulation dtype; k roundings compound to gamma(k) = k·u / (1 - k·u)
  (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1).
* Intrinsic errors (exp, division, rsqrt, log) come from ``verifier.tolerance.INTRINSICS`` in the
  same units. The math mode is an argument; ``None`` (unknown) takes the worst mode, so a correct
  kernel is never rejected for using approximate intrinsics.
* The kernel's final conversion to the output dtype costs at most 1 ulp_out at the stored value
  (1/2 for round-to-nearest; 1 also covers truncating conversions).
* eta = smallest normal of the accumulation dtype: the worst underflow / flush-to-zero error of one
  operation.

These are worst-case bounds, so they stay valid for any reduction order (sequential per thread,
trees, online rescaling). They catch gross defects (missing rescale, NaN merges, cancellation,
low-precision accumulation, scaling bugs); element-level precision is ``compare``'s job.

Invariant names (``Violation.invariant``): softmax.{finite,sum,range,order};
log_softmax.{finite,logsumexp,nonpositive,order}; online_softmax_stats.{max,l_range};
rmsnorm.{finite,rms}; fused_add_rmsnorm.{finite,rms,consistent}; layernorm.{finite,mean,var};
reduce_sum.{finite,sum}.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.findings import Finding
from verifier.ops import get_op
from verifier.spec import MATH_MODES, Dtypes
from verifier.tolerance import INTRINSICS, Intrinsics
from verifier.ulp import round_to, ulp

__all__ = ["Violation", "check", "violations_to_findings"]

_U64 = 2.0 ** -53  # float64 arithmetic of the checks themselves


@dataclass(frozen=True, eq=False)
class Violation:
    """One broken invariant. ``rows``: offending row indices; ``score``: worst value / bound."""

    invariant: str
    rows: np.ndarray
    message: str
    score: float = 0.0


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    u: float  # unit roundoff of the accumulation dtype (0 for integer accumulation: exact)
    eta: float
    intr: Intrinsics
    online: bool
    out: str
    inp: str


def _worst_intrinsics(acc: str) -> Intrinsics:
    table = [v for (a, _), v in INTRINSICS.items() if a == acc] or [v for (a, _), v in INTRINSICS.items()
                                                                     if a == "float32"]
    return Intrinsics(
        exp=max(i.exp for i in table), exp_arg=max(i.exp_arg for i in table), div=max(i.div for i in table),
        rsqrt=max(i.rsqrt for i in table), log_abs=max(i.log_abs for i in table),
        log_rel=max(i.log_rel for i in table), flush=True, source="worst of all math modes")


def _ctx(dtypes: Dtypes, math_mode, online) -> _Ctx:
    acc = dtypes.acc
    if math_mode is None:
        intr = _worst_intrinsics(acc)
    elif math_mode not in MATH_MODES:
        raise UsageError(f"unknown math mode {math_mode!r}", fix=f"use one of {', '.join(MATH_MODES)} or None")
    else:
        # The constants are in units of u_acc; accumulation dtypes without their own row (fp16/bf16
        # accumulation) reuse the fp32 row of the mode: the intrinsics are evaluated in fp32 anyway.
        intr = INTRINSICS.get((acc, math_mode)) or INTRINSICS.get(("float32", math_mode)) or _worst_intrinsics(acc)
    if _dt.is_float(acc):
        fi = _dt.finfo(acc)
        u, eta = _dt.unit_roundoff(acc), float(fi.smallest_normal)
    else:
        u, eta = 0.0, 0.0
    return _Ctx(u=u, eta=eta, intr=intr, online=True if online is None else bool(online),
                out=dtypes.output, inp=dtypes.input)


def _gamma(k, u):
    ku = np.asarray(k, dtype=np.float64) * u
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ku < 1, ku / (1 - ku), np.inf)


def _inv1m(g):
    """1/(1 - g), infinite once g >= 1 (the bound it feeds becomes vacuous)."""
    with np.errstate(divide="ignore"):
        return np.where(g < 1, 1.0 / np.maximum(1 - g, 1e-300), np.inf)


def _ulp_out(y, c: _Ctx):
    return ulp(y, c.out) if _dt.is_float(c.out) else np.where(np.isfinite(y), 1.0, np.nan)


def _f64(a) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.asarray(_dt.to_numpy(a), dtype=np.float64)


def _violation(name, bad, value, bound, what) -> list[Violation]:
    """A Violation for rows where ``bad``; message names the worst row (largest value/bound)."""
    bad = np.asarray(bad, dtype=bool)
    if not bad.any():
        return []
    rows = np.flatnonzero(bad)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bad, np.abs(value) / np.abs(bound), -np.inf)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    w = int(np.argmax(ratio))
    msg = (f"{len(rows)} of {bad.size} rows violate {what}; worst row {w}: {value[w]:.6g} vs bound "
           f"{bound[w]:.6g} (rows {rows[:8].tolist()}{'...' if len(rows) > 8 else ''})")
    return [Violation(name, rows, msg, float(ratio[w]))]


def _finite_violation(name, must_be_finite, y2d) -> list[Violation]:
    """Rows that must be finite (per the caller's reasoning) but hold NaN/inf."""
    nonfin = must_be_finite & ~np.isfinite(y2d).all(axis=1)
    if not nonfin.any():
        return []
    rows = np.flatnonzero(nonfin)
    count = (~np.isfinite(y2d[rows])).sum(axis=1)
    w = int(rows[np.argmax(count)])
    msg = (f"{len(rows)} of {len(nonfin)} rows hold NaN/inf although their input is finite; worst row {w}: "
           f"{int(count.max())} non-finite outputs (rows {rows[:8].tolist()}{'...' if len(rows) > 8 else ''})")
    return [Violation(name, rows, msg, float(count.max()))]


def _order_violation(name, rows_ok, x, y, err) -> list[Violation]:
    """x_i < x_j must give y_i <= y_j, up to the elements' error bounds: the exact outputs are
    strictly ordered, and |y - exact| <= err, so a correct y only breaks order when
    y_i - err_i > y_j + err_j is false. Vectorized: sort each row by x, take the prefix max of
    y - err over the earlier *strictly smaller* x groups and compare with y + err."""
    M, N = x.shape
    idx = np.argsort(x, axis=1, kind="stable")
    xs, ys, es = (np.take_along_axis(a, idx, axis=1) for a in (x, y, err))
    new = np.ones((M, N), dtype=bool)
    new[:, 1:] = xs[:, 1:] != xs[:, :-1]
    start = np.maximum.accumulate(np.where(new, np.arange(N), 0), axis=1)  # first index of each x group
    pm = np.maximum.accumulate(ys - es, axis=1)
    prev = np.take_along_axis(pm, np.maximum(start - 1, 0), axis=1)
    prev = np.where(start > 0, prev, -np.inf)
    excess = np.where(rows_ok[:, None], prev - (ys + es), -np.inf)
    j = np.argmax(excess, axis=1)[:, None]
    bad = np.take_along_axis(excess, j, 1)[:, 0] > 0
    value = np.take_along_axis(prev - ys, j, 1)[:, 0]
    bound = np.take_along_axis(es, j, 1)[:, 0]
    return _violation(name, bad, value, bound, "order preservation x_i < x_j => y_i <= y_j (value = "
                      "(y_i - err_i) - y_j over the pair breaking it most, bound = err_j)")


# ---------------------------------------------------------------------------------------------
# Softmax family
# ---------------------------------------------------------------------------------------------


def _softmax_units(x, live_n, c: _Ctx):
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


def _softmax_rows(x, y):
    """Rows the bound checks apply to. NaN / +inf in the input: the output is NaN (compare's
    nan-inf check judges it). Fully masked rows (all -inf): skipped here on purpose, the output
    must be all-NaN and that is compare's job, not a sum invariant."""
    bad_in = np.isnan(x).any(axis=1) | (x == np.inf).any(axis=1)
    masked = (x == -np.inf).all(axis=1)
    live = ~bad_in & ~masked
    return live, live & np.isfinite(y).all(axis=1)


def _check_softmax(x, y, c: _Ctx) -> list[Violation]:
    live, ok = _softmax_rows(x, y)
    out = _finite_violation("softmax.finite", live, y)
    n = (x > -np.inf).sum(axis=1)
    _, e_units, s_units = _softmax_units(np.where(ok[:, None], x, 0.0), n, c)
    # Per element: the kernel's pre-rounding value v_j = p_j(1 + theta_j), |theta_j| <= g_j with
    # g_j = gamma(e_units_j + s_units + div); two ops may underflow (exp, division): 2·eta. The
    # stored y_j = v_j ± ulp_out(y_j). Hence p_j <= (y_j + U_j)/(1 - g_j) and
    #   |y_j - p_j| <= U_j + g_j·p_j + 2·eta =: err_j.
    # Sum: sum_j p_j = 1 exactly, so |sum_j y_j - 1| <= sum_j err_j (+ float64 summation here).
    g = _gamma(e_units + s_units[:, None] + c.intr.div, c.u)
    g = np.where(x == -np.inf, 0.0, g)  # p_j = 0 exactly; any y_j there shows up in the sum itself
    U = _ulp_out(y, c)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        p_hi = np.where(g < 1, (np.abs(y) + U) / (1 - g), np.inf)
        err = U + g * p_hi + 2 * c.eta
        total = y.sum(axis=1)
        dev = np.abs(total - 1.0)
        bound = err.sum(axis=1) + y.shape[1] * _U64 * np.abs(y).sum(axis=1)
    out += _violation("softmax.sum", ok & ~(dev <= bound), dev, bound, "sum(y) == 1 (value = |sum(y) - 1|)")
    # Range: p_j in [0, 1]; every operation keeps signs, so y_j >= 0 exactly (-0 allowed). Above:
    # v_j <= 1 + g_j, and rounding up cannot pass the first output value >= 1 + g_j, so y_j is wrong
    # when its predecessor (>= y_j - U_j/2) already reaches 1 + g_j, i.e. y_j - 1 >= g_j + U_j/2.
    dist = np.where(y > 1, y - 1, np.where(y < 0, -y, 0.0))
    allowed = np.where(y > 1, g + U / 2, 0.0)
    excess = np.where(ok[:, None] & (dist > 0), dist - allowed, -np.inf)
    excess = np.where((y > 1) & (excess == 0), np.finfo(np.float64).tiny, excess)  # '>=' above 1
    j = np.argmax(excess, axis=1)[:, None]
    pick = lambda a: np.take_along_axis(a, j, 1)[:, 0]  # noqa: E731
    out += _violation("softmax.range", pick(excess) > 0, pick(dist), pick(allowed),
                      "0 <= y <= 1 (value = distance of y outside [0, 1])")
    out += _order_violation("softmax.order", ok, np.where(ok[:, None], x, 0.0), y, err)
    return out


def _check_log_softmax(x, y, c: _Ctx) -> list[Violation]:
    live, _ = _softmax_rows(x, y)
    # -inf is the correct log-probability of a masked element; everything else must be finite.
    fin_where = np.where(x == -np.inf, 0.0, y)
    out = _finite_violation("log_softmax.finite", live, fin_where)
    ok = live & np.isfinite(fin_where).all(axis=1) & ~np.isnan(y).any(axis=1)
    xs = np.where(ok[:, None], x, 0.0)
    n = (x > -np.inf).sum(axis=1)
    m, _, s_units = _softmax_units(xs, n, c)
    fin = np.isfinite(xs)
    d = np.where(fin, np.abs(xs - m), 0.0)
    # y_j = (x_j - m) - log s. Absolute error before output rounding (first order, gamma for the
    # sum): subtraction u·|x_j - m|; log(s(1 + sigma)) = log s + sigma with sigma = gamma(s_units);
    # the log intrinsic (log_abs + log_rel·log n)·u, log s <= log n; final subtraction u·|y_j|;
    # an x - (m + log s) ordering rounds m + log s once more: u·(|m| + log n). Underflowed exp
    # terms lose at most n·eta of s >= 1. Plus the output rounding U_j: D_j bounds |y_j - log p_j|.
    logn = np.log(np.maximum(n, 1))[:, None]
    sigma = _gamma(s_units, c.u)[:, None] + n[:, None] * c.eta
    yf = np.where(fin, y, 0.0)
    D = (sigma + c.u * (d + c.intr.log_abs + c.intr.log_rel * logn + np.abs(yf) + np.abs(m) + logn)
         + _ulp_out(yf, c))
    D = np.where(fin, D, 0.0)
    # sum_j p_j = 1 and exp(y_j) = p_j·exp(y_j - log p_j), so |sum_j exp(y_j) - 1| <=
    # sum_j p_j·(exp(D_j) - 1) <= sum_j exp(y_j + D_j)·expm1(D_j).
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.where(fin, np.exp(y), 0.0).sum(axis=1)
        bound = np.where(fin, np.exp(yf + D) * np.expm1(D), 0.0).sum(axis=1) + y.shape[1] * _U64 * s
        dev = np.abs(s - 1.0)
        lse = np.log(s)
    bad = ok & ~(dev <= bound)
    out += _violation("log_softmax.logsumexp", bad, dev, bound,
                      "logsumexp(y) == 0 (value = |sum(exp(y)) - 1|)")
    if bad.any():
        w = out[-1]
        out[-1] = Violation(w.invariant, w.rows, w.message + f"; logsumexp(y) of the worst rows: "
                            f"{np.round(lse[w.rows[:4]], 6).tolist()}", w.score)
    # y <= 0: log p <= 0, and both x_j - m <= 0 (rounding is monotone) and log s >= 0 (s >= 1 since
    # exp(0) = 1 is exact) hold in any mode except for the log intrinsic's absolute error log_abs·u.
    lim = c.intr.log_abs * c.u
    pos = np.where(ok[:, None] & fin, y, -np.inf).max(axis=1)
    out += _violation("log_softmax.nonpositive", ok & (pos > lim), pos, np.full_like(pos, lim) + 0.0,
                      f"y <= 0 (+{lim:.3g} for the log intrinsic's absolute error; value = max y)")
    out += _order_violation("log_softmax.order", ok, np.where(ok[:, None], x, 0.0), np.where(fin, y, -np.inf),
                            np.where(fin, D, 0.0))
    return out


def _check_online_stats(x, m_out, l_out, c: _Ctx) -> list[Violation]:
    bad_in = np.isnan(x).any(axis=1) | (x == np.inf).any(axis=1)
    out = []
    # m is a max: exact in any order; the only rounding is storing it in the output dtype.
    mx = np.max(np.where(bad_in[:, None], 0.0, x), axis=1)
    mx_out = _f64(_round_out(mx, c.out))
    wrong = ~bad_in & ~((m_out == mx_out) | (np.isnan(m_out) & np.isnan(mx_out)))
    out += _violation("online_softmax_stats.max", wrong, m_out, mx_out, "m == max(x) exactly")
    # l = sum_j exp(x_j - m) over the n non-masked elements. The max term is exp(0) = 1 exactly and
    # the rest are >= 0, so l >= 1 (rounding is monotone). Each term exact <= 1, so l <= n·(1 +
    # gamma(s_units)) (the sum and rescale bound of the softmax), then stored: a stored l whose
    # predecessor (>= l - U/2) already reaches that is wrong.
    n = (x > -np.inf).sum(axis=1)
    live = ~bad_in & (n > 0)
    _, _, s_units = _softmax_units(np.where(live[:, None], x, 0.0), n, c)
    upper = n * (1 + _gamma(s_units + c.intr.exp, c.u)) + n * c.eta
    U = _ulp_out(l_out, c)
    with np.errstate(invalid="ignore"):
        bad = live & ~((l_out >= 1) & (l_out - U / 2 < upper))
    out += _violation("online_softmax_stats.l_range", bad, l_out, np.where(l_out < 1, 1.0, upper),
                      "1 <= l <= n (n = non-masked elements; value = l)")
    return out


def _round_out(v, dtype):
    return round_to(v, dtype) if _dt.is_float(dtype) else v


# ---------------------------------------------------------------------------------------------
# Normalizations
# ---------------------------------------------------------------------------------------------


def _scale_violation(name, ok, z, a, e, g_s, J, what):
    """Compare a seminorm of z = (y - b)/w with that of the exact a, on the columns J (w != 0).

    Model: z_j = (1 + theta_s)·(a_j + e'_j) with |theta_s| <= g_s common to the row (the kernel's
    1/rms or 1/std) and |e'_j| <= e_j. A seminorm S (rms; or std, which ignores a common shift)
    obeys |S(a + e') - S(a)| <= rms(e'), hence (1 - g_s)(S(a) - E) <= S(z) <= (1 + g_s)(S(a) + E)
    with E = rms_J(e). The float64 arithmetic here adds N·2^-53 relatively.
    """
    nJ = np.maximum(J.sum(axis=1), 1)

    def rms(v):
        return np.sqrt(np.where(J, v * v, 0.0).sum(axis=1) / nJ)

    def std(v):
        mean = np.where(J, v, 0.0).sum(axis=1) / nJ
        return rms(v - mean[:, None])

    S = rms if what == "rms" else std
    with np.errstate(invalid="ignore", over="ignore"):
        Sz, Sa, E = S(z), S(a), rms(e)
        slack = z.shape[1] * 4 * _U64 * (Sa + E)
        lo = np.maximum(1 - g_s, 0) * np.maximum(Sa - E, 0) - slack  # vacuous once g_s >= 1
        hi = (1 + g_s) * (Sa + E) + slack
        dev = np.abs(Sz - Sa)
        bound = np.maximum(hi - Sa, Sa - lo)
        bad = ok & ~((Sz >= lo) & (Sz <= hi))
    if what == "std":
        return _violation(name, bad, dev, bound, "std((y - b)/w) == std of the exact normalized row, "
                          "sqrt(var/(var + eps)) (value = |std - expected|)")
    return _violation(name, bad, dev, bound, "rms(y/w) == sqrt(ms/(ms + eps)) (value = |rms - expected|)")


def _rms_gs(x, eps, c: _Ctx, k_h=0.0):
    """Relative error of the kernel's 1/sqrt(mean(h²) + eps): squares (1 + 2·k_h each for inputs
    already carrying k_h units), any-order sum N - 1, scaling by 1/N 2, adding eps and rounding eps
    2; underflow/flush costs N·eta of the sum. sqrt halves the relative error, rsqrt adds its own."""
    N = x.shape[1]
    ms = np.mean(x * x, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        v_rel = _gamma(N - 1 + 1 + 2 * k_h + 4, c.u) + N * c.eta / (ms + eps)
    return ms, v_rel / 2 + c.intr.rsqrt * c.u


def _check_rms(name, x, w, y, eps, c: _Ctx, k_h=0.0, h_abs=None, consistent=False) -> list[Violation]:
    """y = x·w/sqrt(ms + eps), ms = mean(x²). On the columns J where w != 0 the exact
    a_j = x_j/sqrt(ms + eps) has rms = sqrt(ms_J/(ms + eps)) (= sqrt(ms/(ms + eps)) when no w is 0:
    the eps effect). Per element, z_j = y_j/w_j errs from (1 + theta_s)·a_j by: the two products
    x·r·w, gamma(2 + k_h) relatively; output rounding U_j/|w_j|; a flushed-to-zero input, eta/rms;
    and h_abs_j (an absolute uncertainty of x_j itself, e.g. the rounded residual)."""
    fin_in = np.isfinite(x).all(axis=1)
    out = _finite_violation(f"{name}.finite", fin_in, y)
    ms, g_s = _rms_gs(x, eps, c, k_h)
    ok = fin_in & np.isfinite(y).all(axis=1) & (ms > 0)  # all-zero rows: y = 0, compare's job
    J = np.broadcast_to(w != 0, x.shape)
    rho = np.sqrt(ms + eps)[:, None]
    wsafe = np.where(w != 0, np.abs(w), 1.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        a = x / rho
        z = y / np.where(w != 0, w, 1.0)
        e = (np.abs(a) * _gamma(2 + k_h, c.u) + (_ulp_out(y, c) / wsafe + c.eta / rho) * _inv1m(g_s)[:, None]
             + (0.0 if h_abs is None else h_abs / rho))
    out += _scale_violation(f"{name}.rms", ok, z, a, e, g_s, J, "rms")
    if consistent:
        # Elementwise form of the same model: |z_j - a_j| <= g_s·|a_j| + (1 + g_s)·e_j. It ties y to
        # the stored residual element by element (an rms alone cannot see which row was normalized).
        with np.errstate(invalid="ignore", over="ignore"):
            lim = g_s[:, None] * np.abs(a) + (1 + g_s)[:, None] * e
            excess = np.where(J & ok[:, None], np.abs(z - a) - lim, -np.inf)
            j = np.argmax(excess, axis=1)[:, None]
            pick = lambda v: np.take_along_axis(v, j, 1)[:, 0]  # noqa: E731
            out += _violation(f"{name}.consistent", pick(excess) > 0, pick(np.abs(z - a)), pick(lim),
                              "y == residual_out·w/rms(residual_out) per element (value = |y/w - h/rms(h)|)")
    return out


def _check_layernorm(x, w, b, y, eps, c: _Ctx) -> list[Violation]:
    """y = (x - mu)/sqrt(var + eps)·w + b. With c_j = (x_j - mu)/s, s = sqrt(var + eps), and
    z_j = (y_j - b_j)/w_j on the columns w != 0:

    * the kernel's mean errs by dmu <= gamma(N + 1)·mean|x| (any-order sum and scaling), a shift
      Delta = dmu/s common to the row;
    * its variance errs relatively by gamma(N + 3)(1 + kappa) + Delta² with kappa = mean|x|/s:
      two-pass gives gamma(N + 3) plus dmu² (the cross term cancels), Welford's updating
      algorithm about N·kappa·u (Chan, Golub & LeVeque 1983); the textbook E[x²] - E[x]² errs by
      ~N·kappa²·u and fails. Adding eps and rounding it: 2u. 1/s then errs by g_s = half of that
      plus the rsqrt intrinsic;
    * per element: subtraction, product by 1/s and by w, gamma(3)·(|c_j| + Delta); adding b
      rounds once more, u·|y_j|; output rounding U_j; both divided by |w_j|.

    Mean: |mean(z) - mean(c)| <= g_s·|mean(c)| + (1 + g_s)(Delta + mean(e)). Variance: std is a
    seminorm that ignores the common shift Delta, see _scale_violation. Constant rows have
    var = 0: c = 0 exactly, so mean(z) ~ 0 and var(z) ~ 0 within the same bounds.
    """
    N = x.shape[1]
    fin_in = np.isfinite(x).all(axis=1)
    out = _finite_violation("layernorm.finite", fin_in, y)
    ok = fin_in & np.isfinite(y).all(axis=1)
    xs = np.where(ok[:, None], x, 0.0)
    mu = xs.mean(axis=1, keepdims=True)
    var = ((xs - mu) ** 2).mean(axis=1, keepdims=True)
    s = np.sqrt(var + eps)
    cj = (xs - mu) / s
    mean_abs = np.abs(xs).mean(axis=1, keepdims=True)
    delta = _gamma(N + 1, c.u) * mean_abs / s + N * c.eta / s
    kappa = mean_abs / s
    g_var = _gamma(N + 3, c.u) * (1 + kappa) + delta * delta + 2 * c.u
    g_s = (g_var / 2 + c.intr.rsqrt * c.u)[:, 0]
    J = np.broadcast_to(w != 0, x.shape)
    wsafe = np.where(w != 0, np.abs(w), 1.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        z = (y - b) / np.where(w != 0, w, 1.0)
        e = (_gamma(3, c.u) * (np.abs(cj) + delta)
             + (_ulp_out(y, c) + c.u * np.abs(y) + c.eta) / wsafe * _inv1m(g_s)[:, None])
    nJ = np.maximum(J.sum(axis=1), 1)
    mz = np.where(J, z, 0.0).sum(axis=1) / nJ
    mc = np.where(J, cj, 0.0).sum(axis=1) / nJ
    me = np.where(J, e, 0.0).sum(axis=1) / nJ
    with np.errstate(invalid="ignore"):
        bound = g_s * np.abs(mc) + (1 + g_s) * (delta[:, 0] + me) + N * 4 * _U64 * (1 + np.abs(mc))
        dev = np.abs(mz - mc)
    out += _violation("layernorm.mean", ok & ~(dev <= bound), dev, bound,
                      "mean((y - b)/w) == 0 (value = |mean - expected|)")
    # The std check's E must also cover Delta·gamma(3) (inside e) but not Delta itself.
    out += _scale_violation("layernorm.var", ok, z, cj, e, g_s, J, "std")
    return out


# ---------------------------------------------------------------------------------------------
# Sum
# ---------------------------------------------------------------------------------------------


def _check_sum(x_raw, y, c: _Ctx) -> list[Violation]:
    """|y - sum(x)| <= gamma(N - 1)·sum|x| (any order, Higham eq. 4.4) + N·eta (flushed subnormals)
    + the output rounding ulp_out(y) (0 when accumulating and storing integers: exact)."""
    N = x_raw.shape[1]
    if x_raw.dtype.kind in "iu":
        xi = x_raw.astype(np.int64)
        exact, absum = xi.sum(axis=1).astype(np.float64), np.abs(xi).sum(axis=1).astype(np.float64)
        fin = np.ones(len(y), dtype=bool)
        f64_err = 0.0
    else:
        x = _f64(x_raw)
        fin = np.isfinite(x).all(axis=1)
        xs = np.where(fin[:, None], x, 0.0)
        exact, absum = xs.sum(axis=1), np.abs(xs).sum(axis=1)
        f64_err = N * _U64 * absum
    int_exact = not _dt.is_float(c.out) and c.u == 0.0
    out_rounding = 0.0 if int_exact else _ulp_out(y, c)
    # a sum beyond the output range must overflow (compare's job); skip those rows here
    fmax = float(_dt.finfo(c.out).max) if _dt.is_float(c.out) else float(np.iinfo(_dt.numpy_dtype(c.out)).max)
    ok = fin & (np.abs(exact) <= fmax)
    out = _finite_violation("reduce_sum.finite", ok, y[:, None])
    ok &= np.isfinite(y)
    with np.errstate(invalid="ignore"):
        bound = _gamma(N - 1, c.u) * absum + N * c.eta + out_rounding + f64_err
        dev = np.abs(y - exact)
    out += _violation("reduce_sum.sum", ok & ~(dev <= bound), dev, bound,
                      "|y - sum(x)| <= gamma(N-1)·sum|x| + ulp_out(y) (value = |y - sum(x)|)")
    return out


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def check(op: str, inputs: dict, outputs: dict, dtypes: Dtypes, params: dict | None = None, *,
          math_mode: str | None = None, online: bool | None = None) -> list[Violation]:
    """All invariants of ``op`` that ``outputs`` break (an empty list when none).

    ``inputs`` / ``outputs``: numpy arrays (ml_dtypes included) or torch tensors, named as in
    ``verifier.ops``. ``math_mode`` (one of spec.MATH_MODES) and ``online`` (the kernel rescales a
    running softmax sum) tighten the bounds; ``None`` assumes the worst case of each.
    """
    opdef = get_op(op)
    if not isinstance(dtypes, Dtypes):
        raise UsageError(f"invariants.check: dtypes must be a verifier.spec.Dtypes, got {type(dtypes).__name__}",
                         fix="pass verifier.spec.dtypes('bf16') or Dtypes(input, output, acc)")
    for kind, names, given in (("input", opdef.inputs, inputs), ("output", opdef.outputs, outputs)):
        missing = [t for t in names if t not in given]
        if missing:
            raise UsageError(f"invariants.check({op!r}): {kind}s {missing} are missing",
                             fix=f"pass all of {list(names)}")
    params = {**opdef.params, **(params or {})}
    x_raw = _dt.to_numpy(inputs["x"])
    if x_raw.ndim != 2:
        raise UsageError(f"invariants.check({op!r}): x has shape {x_raw.shape}", fix="pass x as (M, N) rows")
    M, N = x_raw.shape
    ys = {t: _f64(outputs[t]) for t in opdef.outputs}
    for t, v in ys.items():
        if v.shape != opdef.shape_of(t, M, N):
            raise UsageError(f"invariants.check({op!r}): output {t!r} has shape {v.shape}, expected "
                             f"{opdef.shape_of(t, M, N)}", fix="pass the kernel's outputs unreshaped")
    c = _ctx(dtypes, math_mode, online)
    x = _f64(x_raw)
    with np.errstate(invalid="ignore", over="ignore"):
        if op == "softmax":
            return _check_softmax(x, ys["y"], c)
        if op == "log_softmax":
            return _check_log_softmax(x, ys["y"], c)
        if op == "online_softmax_stats":
            return _check_online_stats(x, ys["m"], ys["l"], c)
        if op == "rmsnorm":
            return _check_rms("rmsnorm", x, _f64(inputs["w"]), ys["y"], params["eps"], c)
        if op == "fused_add_rmsnorm":
            # Normalize the stored residual h = round(x + residual): the kernel may have normalized
            # the unrounded sum instead, which differs by <= ulp_in(h) per element (h_abs) and moves
            # ms by 2·2u_in relatively (k_h in units of u_acc). Checking y against the stored
            # residual also checks that y and residual are consistent.
            h = ys["residual"]
            u_in = _dt.unit_roundoff(dtypes.input) if _dt.is_float(dtypes.input) else 0.0
            k_h = 1.0 + (2 * u_in / c.u if c.u else 0.0)
            h_abs = ulp(h, dtypes.input) if _dt.is_float(dtypes.input) else 0.0
            return _check_rms("fused_add_rmsnorm", h, _f64(inputs["w"]), ys["y"], params["eps"], c,
                              k_h=k_h, h_abs=h_abs, consistent=True)
        if op == "layernorm":
            return _check_layernorm(x, _f64(inputs["w"]), _f64(inputs["b"]), ys["y"], params["eps"], c)
        if op == "reduce_sum":
            return _check_sum(x_raw, ys["y"], c)
    raise UsageError(f"invariants.check: no invariants for op {op!r}", fix="add them to verifier/invariants.py")


_CONTEXT = ("kernel", "dtype", "input", "shape", "seed", "repro", "severity")


def violations_to_findings(violations, **context) -> list[Finding]:
    """One 'invariant' Finding per Violation; ``context`` fills Finding fields (kernel, dtype,
    input, shape, seed, repro, severity)."""
    unknown = set(context) - set(_CONTEXT)
    if unknown:
        raise UsageError(f"violations_to_findings: unknown context {sorted(unknown)}", fix=f"use {_CONTEXT}")
    return [Finding(check="invariant", message=f"{v.invariant}: {v.message}", score=v.score, **context)
            for v in violations]
