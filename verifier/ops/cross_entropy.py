"""cross_entropy: logits x[M,N], labels[M] (int64 or int32) -> loss[M] per row, no reduction: loss =
logsumexp(x) - x[label]; rows whose label is ``ignore_index`` (-100) give exactly 0. The loss is float32
(``dtypes("bf16", "f32")``) or, declared so, in the logits' dtype (``dtypes("bf16")``: Liger, FlagGems): the
budget is the same error bound before the kernel's rounding to the output dtype.
params: ignore_index=-100, label_dtype='int64' ('int32' for kernels reading 32-bit labels), and the variants, whose
defaults give the plain loss: scale=1 (s: logits x·s first, flash-attn's logit_scale, Cohere), softcap=0 (c > 0:
logits c·tanh(x·s/c), Gemma 2), label_smoothing=0 (e: PyTorch's (1 - e)·nll + e·mean over the N classes of -log p),
z_loss=0 (z: + z·lse² per row, PaLM / Liger / flash-attn's lse_square_scale).

cross_entropy_reduced: the same loss reduced over the rows into loss[1], params as above plus reduction='mean'
('mean': over the non-ignored rows, NaN when there is none; 'sum'), PyTorch's reduction='mean' / 'sum', and
empty_mean='nan' ('zero': a kernel writing 0 for a mean over no counted row declares so, as Liger does). A separate
op because an op's output shapes are its declaration's (a per-row loss[M] and a batch's loss[1] are judged
differently: the large-index case judges some rows only); both share this module's reference and error model.

cross_entropy_soft: logits x[M,N] and a target distribution target[M,N] (in the logits' dtype) -> loss[M] =
sum_j t_j·(-log p_j), PyTorch's class-probability targets; the variants' params as above, and zero_target='zero'
(0·log 0 = 0 where a target 0 meets a -inf logit; 'nan': PyTorch's 0·(-inf) = NaN, as t·log_softmax computes it).
A separate op because its inputs differ (a float target per class, not an integer label per row).
"""
from __future__ import annotations

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.numerics.errmodel import fits_in, gamma
from verifier.numerics.violations import U64, finite_violation, ulp_out, violation
from verifier.ops import ce_extra_outputs as ce_extra
from verifier.ops.ce_labels import ignore_index, ignored_rows, logit_scale, smoothing
from verifier.ops.model import Op, OpCase, Tensor
from verifier.ops.log_softmax import holds, one_high_logit, wide_rows
from verifier.ops.softmax import row_softmax, softmax_parts, softmax_units
from verifier.ops.samplers import fit as _fit, holds_inf as _holds_inf, masked_prefix as _masked_prefix, normal as _normal


LABEL_DTYPES = ("int64", "int32")


def _label_index(labels, params):
    t = np.asarray(labels).astype(np.int64)
    ignored = ignored_rows(t, params)
    return np.where(ignored, 0, t), ignored


# --------------------------------------------------------------------------- error budget (tolerance)

_U32 = 2.0 ** -24  # float32's unit roundoff
TANH_UNITS = 5.0  # tanhf: 2 ulp (CUDA guide) = 5 u from exact; a tanh built from exp is bounded per element below


def capped(x, p, c):
    """(x', its absolute error per element) for the logit transforms: x·scale (flash-attn's logit_scale, Unsloth's
    logit_scaling for Cohere), then the softcap x' = cap·tanh(x·scale / cap) (x itself, 0 without either).
    The product rounds once, u|x·scale|, and once more where the scale is not a float32 (the kernel's scalar is):
    2u|x·scale|; the softcap's slope sech² <= 1 carries it. The kernel's x / cap (or x·(1/cap): two roundings)
    moves tanh's argument by 2u|x/cap|, which tanh's slope sech² carries; tanh itself errs by TANH_UNITS·u, or,
    built from exp as 1 - 2/(exp(2y) + 1), by exp's error at 2y plus three roundings (absolute, |tanh| <= 1),
    times cap; then u|x'| for the product."""
    scale = logit_scale(p)
    cap = float(p.get("softcap", 0.0) or 0.0)
    if cap <= 0 and scale == 1.0:
        return x, 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        xs = x * scale if scale != 1.0 else x
        # the product, and a rounding of the scale to float32 (the kernel's scalar) and then to a 16-bit accumulation
        # dtype, each where the scale does not fit
        s_units = 0.0 if scale == 1.0 else \
            1.0 + (float(np.float32(scale)) != scale) + (c.u > _U32 and not fits_in(scale, c.u))
        s_err = s_units * c.u * np.abs(xs)
        if cap <= 0:
            return xs, np.where(np.isfinite(xs), s_err, 0.0)
        y = xs / cap
        xc = cap * np.tanh(y)
        sech2 = 1.0 / np.cosh(np.minimum(np.abs(y), 350.0)) ** 2
        ay = np.where(np.isfinite(y), np.abs(y), 0.0)
        t_units = np.maximum(TANH_UNITS, c.intr.exp + c.intr.exp_arg * 2 * ay + 3.0 + c.intr.div)
        err = c.u * ((2.0 + c.c_in) * ay * cap * sech2 + cap * t_units + np.abs(xc)) + s_err * sech2
    return xc, np.where(np.isfinite(xs), err, 0.0)


def _lse_parts(x, p, c):
    """(x', m, log s, sigma, lse's rounding units, the softcap's 2·max error) of a row's lse on the capped logits."""
    xc, xerr = capped(x, p, c)
    w = row_softmax(xc)
    m, _, _, s_units = softmax_parts(xc, c, weights=w)
    with np.errstate(over="ignore", invalid="ignore"):
        log_s = np.log(np.sum(np.exp(xc - m), axis=-1))
    sigma = gamma(s_units[:, 0], c.u) + c.N * c.eta
    lse_units = c.intr.log_abs + c.intr.log_rel * np.abs(log_s) + np.abs(m[:, 0] + log_s)
    cap_err = 2 * np.max(xerr, axis=1) if np.ndim(xerr) else 0.0
    return xc, m[:, 0], log_s, sigma, lse_units, cap_err


def _row_errors(x, p, c, xs, y=None):
    """(nll, E_nll, lse, E_lse, xc, m, ignored) of the per-row loss on the (capped) logits; ``y``: the reference's
    nll (the plain loss), whose magnitude the final subtraction's rounding is taken from."""
    t, ignored = _label_index(xs["labels"], p)
    xc, m, log_s, sigma, lse_units, cap_err = _lse_parts(x, p, c)
    x_t = xc[np.arange(x.shape[0]), t]
    d_t = np.abs(x_t - m)
    nll = m + log_s - x_t
    a_nll = np.abs(nll if y is None else y)
    E_nll = sigma + c.u * (d_t + c.c_in * (np.abs(x_t) + np.abs(m)) + lse_units + a_nll) + cap_err
    E_lse = sigma + c.u * (c.c_in * np.abs(m) + lse_units) + cap_err / 2
    return nll, E_nll, m + log_s, E_lse, xc, m, ignored


def row_error(x, p, c, xs, y=None):
    """(per-row absolute error bound E, the per-row loss in float64) of the loss with its variants (docs/tolerances.md
    "Cross entropy variants"): label smoothing (1 - e)·nll + e·(lse - mean_j x'_j), whose row sum of N terms errs
    by (gamma(N) + 3u)·(mean|x'| + |m| + |lse|) (as Σx'_j, Σ(x'_j - m) or Σ log p_j = Σ(x'_j - lse), each term
    scaled by e/N or not), the two products and
    their sum u(2|nll| + 2e|lse - mean| + 2e|lse| + |loss|) (a kernel adding e·lse to -e·mean cancels); z_loss
    z·lse²: z(2|lse|·E_lse + E_lse²) + 3u·z·lse² and the add, u|loss|."""
    eps = smoothing(p, x.shape[1])
    zc = float(p.get("z_loss", 0.0))
    nll, E, lse, E_lse, xc, m, ignored = _row_errors(x, p, c, xs, y if eps == 0 and zc == 0 else None)
    loss = nll
    with np.errstate(over="ignore", invalid="ignore"):
        if eps > 0:
            N = x.shape[1]
            smooth = lse - np.sum(xc, axis=1) / N
            mean_abs = np.mean(np.abs(np.where(np.isfinite(xc), xc, 0.0)), axis=1)
            E_s = E_lse + (gamma(N, c.u) + 3 * c.u) * (mean_abs + np.abs(m) + np.abs(lse))
            loss = (1 - eps) * nll + eps * smooth
            E = (1 - eps) * E + eps * E_s + c.u * (2 * np.abs(nll) + 2 * eps * (np.abs(smooth) + np.abs(lse))
                                                    + np.abs(loss))
        if zc > 0:
            loss = loss + zc * lse * lse
            E = E + zc * (2 * np.abs(lse) * E_lse + E_lse * E_lse) + 3 * c.u * zc * lse * lse + c.u * np.abs(loss)
    return np.where(ignored, 0.0, E), np.where(ignored, 0.0, loss)


def k_cross_entropy(x, loss, p, c, xs):
    """loss = lse - x_t = (m + log s) - x_t, i.e. -log_softmax(x)_t: the log_softmax bound at the
    label. Absolute error: log(s(1 + sigma)) = log s + sigma, sigma = gamma(sum units) (exp terms
    weighted by their share, any-order sum, online rescales if declared); the log intrinsic
    (log_abs + log_rel·|log s|)·u; rounding m + log s, u|m + log s|; the final subtraction, u|loss|;
    a kernel computing (m - x_t) + log s rounds m - x_t instead: u|x_t - m|. Underflowed exp terms
    lose at most N·eta of s >= 1. The kappa of the budget is thus set by the input: |m|, |x_t - m|
    and log s, not by the loss, which can be tiny (the label holds almost all the mass) while the
    error of lse stays relative to the row's max magnitude. Ignored rows are exact (0). The variants'
    params (softcap, label_smoothing, z_loss) add their terms (row_error)."""
    return row_error(x, p, c, xs, loss)[0]


def k_cross_entropy_soft(x, loss, p, c, xs):
    """loss = sum_j t'_j·(lse - x'_j), t' = (1 - e)·t + e/N (the target as given, mixed with the uniform one when
    smoothing): lse's error times sum|t'|; each logit's softcap error, sum|t'|·max δx'; a kernel forming the terms
    or lse·sum t' - sum t'x' rounds products and differences, 2u·|t'_j|(|lse| + |x'_j|), and sums N + 1 terms in any
    order, γ(N + 1)·sum_j |t'_j|(|lse| + |x'_j|); mixing the target, 3u·sum|t'_j|·|lse - x'_j|; then z_loss as
    cross_entropy's; the last add, u|loss|. Terms of target 0 (0·log 0) carry no error."""
    t = np.asarray(xs["target"], dtype=np.float64)
    eps, zc = float(p.get("label_smoothing", 0.0)), float(p.get("z_loss", 0.0))
    xc, m, log_s, sigma, lse_units, cap_err = _lse_parts(x, p, c)
    N = x.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):
        lse = m + log_s
        E_lse = sigma + c.u * (c.c_in * np.abs(m) + lse_units) + cap_err / 2
        tt = (1 - eps) * t + eps / N if eps > 0 else t
        live = tt != 0
        ax = np.where(live & np.isfinite(xc), np.abs(xc), 0.0)
        at = np.where(live, np.abs(tt), 0.0)
        per = at * (np.abs(lse)[:, None] + ax)
        E = np.sum(at, axis=1) * (E_lse + cap_err / 2) + (gamma(N + 1, c.u) + 5 * c.u) * np.sum(per, axis=1)
        if zc > 0:
            E = E + zc * (2 * np.abs(lse) * E_lse + E_lse * E_lse) + 3 * c.u * zc * lse * lse
        return E + c.u * (np.abs(loss) + c.c_in * np.sum(at, axis=1))


def k_cross_entropy_reduced(x, total, p, c, xs):
    """loss[1] = sum (or mean) of the rows' losses over the non-ignored rows: the rows' bounds added, the sum of M
    terms in any order gamma(M + 1)·sum|loss_i| (one more rounding for a kernel dividing each row by the count
    first, as Liger), and for the mean 2u|mean| (the division; the count is exact)."""
    E, loss = row_error(x, p, c, xs)
    _, ignored = _label_index(xs["labels"], p)
    M, n = x.shape[0], int((~ignored).sum())
    with np.errstate(over="ignore", invalid="ignore"):
        Et = np.sum(E) + gamma(M + 1, c.u) * np.sum(np.abs(loss))
        if p["reduction"] == "mean":
            Et = Et / n + 2 * c.u * np.abs(total) if n else 0.0
    return np.broadcast_to(np.asarray(Et, dtype=np.float64), np.shape(total))


# --------------------------------------------------------------------------- invariants


def check(x_raw, inp, ys, params, dtypes, c):
    """Per row, with m = max(x), d_t = m - x_t >= 0, n non-masked elements, lim = log_abs·u (the log
    intrinsic's absolute error), U = ulp_out(loss):

    * ignored: label == ignore_index gives exactly 0;
    * finite: a row of finite logits gives a finite loss;
    * nonneg: the exact loss is >= 0; s >= 1 (exp(0) = 1 is exact, rounding is monotone) makes
      log s >= -lim, so m + log s rounds to >= m - lim - u(|m| + lim) and the loss to
      >= -(lim(1 + u) + u(|m| + lim)) - U;
    * lower: loss >= d_t exactly (log s >= 0); either evaluation order loses at most
      D = lim(1 + u) + u(|m| + lim) + 2u·d_t, so loss >= d_t - D - U;
    * logsumexp: |loss - (lse - x_t)| <= D' + U, lse = m + log(sum exp(x - m)) evaluated here in float64
      (+ its own N·2^-53 slack), D' the kernel's absolute error as in the budget (docs/tolerances.md) with
      the worst intrinsics and the sum's units bounded by their max: sigma = gamma(s_units) + n·eta,
      D' = sigma + u(d_t + log_abs + log_rel·log n + |loss| + |m| + log n). An absolute check: a tiny loss
      (the label holds almost all the mass) has a budget of astronomically many ULPs, this bounds it.
    """
    x, y = inp["x"], ys["loss"]
    t, ignored = _label_index(inp["labels"], params)
    rows = np.arange(x.shape[0])
    out = []
    nz = ignored & ~(y == 0)
    out += violation("cross_entropy.ignored", nz, np.where(nz, y, 0.0), np.zeros_like(y),
                     f"loss == 0 exactly where label == ignore_index ({params['ignore_index']}) (value = loss)")
    x_t = x[rows, t]
    fin_in = ~ignored & np.isfinite(x).all(axis=1)
    out += finite_violation("cross_entropy.finite", fin_in, y[:, None])
    if variant(params):  # the bounds below are the plain loss's; a variant is judged by its values and budget
        return out
    # rows the bounds apply to: not ignored, no NaN / +inf, not all -inf, a finite label logit
    live = (~ignored & ~np.isnan(x).any(axis=1) & ~(x == np.inf).any(axis=1) & np.isfinite(x_t)
            & np.isfinite(y))
    xs = np.where(live[:, None], x, 0.0)
    n = (xs > -np.inf).sum(axis=1)
    m, _, s_units = softmax_units(xs, n, c)
    m = m[:, 0]
    d_t = np.where(live, m - np.where(live, x_t, 0.0), 0.0)
    lim = c.intr.log_abs * c.u
    U = ulp_out(np.where(live, y, 0.0), c)
    base = lim * (1 + c.u) + c.u * (np.abs(m) + lim)
    neg = -(base + U)
    out += violation("cross_entropy.nonneg", live & (y < neg), y, neg, "loss >= 0 (value = loss)")
    lo = d_t - base - 2 * c.u * d_t - U
    out += violation("cross_entropy.lower", live & (y < lo), y, lo,
                     "loss >= max(x) - x[label] (value = loss)")
    logn = np.log(np.maximum(n, 1))
    sigma = gamma(s_units, c.u) + n * c.eta
    yl = np.where(live, y, 0.0)
    D = sigma + c.u * (d_t + c.intr.log_abs + c.intr.log_rel * logn + np.abs(yl) + np.abs(m) + logn) + U
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        lse = m + np.log(np.where(np.isfinite(xs), np.exp(xs - m[:, None]), 0.0).sum(axis=1))
        want = lse - np.where(live, x_t, 0.0)
        slack = 4 * (x.shape[1] + 4) * U64 * (np.abs(m) + logn + np.abs(want) + 1)
        dev = np.abs(yl - want)
    out += violation("cross_entropy.logsumexp", live & ~(dev <= D + slack), dev, D + slack,
                     "loss == logsumexp(x) - x[label] up to the kernel's derived error (value = |loss - expected|)")
    return out


VARIANT_PARAMS = {"label_smoothing": 0.0, "z_loss": 0.0, "softcap": 0.0, "scale": 1.0}  # defaults: the plain loss


def variant(params) -> bool:
    return any(float(params.get(k, v)) != v for k, v in VARIANT_PARAMS.items())


def check_reduced(x_raw, inp, ys, params, dtypes, c):
    """The batch's one value: finite where every non-ignored row's logits are finite and, for 'mean', at least one
    row counts (a mean over no row is NaN, which the value comparison holds the kernel to)."""
    x, y = inp["x"], ys["loss"]
    _, ignored = _label_index(inp["labels"], params)
    live = ~ignored
    must = bool(np.isfinite(x[live]).all()) and (params["reduction"] == "sum" or bool(live.any())
                                                  or params["empty_mean"] == "zero")
    return finite_violation("cross_entropy_reduced.finite", np.array([must]), np.asarray(y).reshape(1, -1))


def check_soft(x_raw, inp, ys, params, dtypes, c):
    """cross_entropy_soft: finite logits and a finite target give a finite loss."""
    fin = np.isfinite(inp["x"]).all(axis=1) & np.isfinite(inp["target"]).all(axis=1)
    return finite_violation("cross_entropy_soft.finite", fin, np.asarray(ys["loss"]).reshape(-1, 1))


# --------------------------------------------------------------------------- inputs


def make_target(rng, x, params, policy):
    """A target distribution per row for logits ``x`` (float64 [M, N]): policy None: random weights, about a third
    of them 0, normalized; 'zero_at_neg_inf': 0 exactly where the logit is -inf (0·log 0), positive elsewhere;
    'one_hot': all the mass on one class with a finite logit (the hard-label loss)."""
    M, N = x.shape
    w = rng.random((M, N)) ** 3
    if policy == "one_hot":
        score = np.where(np.isfinite(x), rng.random((M, N)), -1.0)
        w = np.zeros((M, N))
        w[np.arange(M), np.argmax(score, axis=1)] = 1.0
    elif policy == "zero_at_neg_inf":
        w = np.where(np.isneginf(x), 0.0, w + 0.01)
    else:
        w[rng.random((M, N)) < 0.3] = 0.0
        w[np.arange(M), rng.integers(N, size=M)] += 0.5  # never an all-zero row
    return w / np.maximum(w.sum(axis=1, keepdims=True), 1e-300)


def make_labels(rng, x, params, policy):
    """Labels for logits ``x`` (float64 [M, N]) in the dtype of params['label_dtype'] ('all_ignored': every row
    ignore_index; 'half_ignored': every other row).

    policy None: uniform over [0, N), and when M > 1 about a quarter of the rows (at least one, not
    all) ignored; 'first' / 'last': class 0 / N - 1; 'argmax' / 'argmin': the row's largest / smallest logit; 'finite': a
    random class whose logit is finite; 'ignore_nonfinite': rows holding NaN/inf are ignored, the
    others random."""
    dt = params["label_dtype"]
    if dt not in LABEL_DTYPES:
        raise UsageError(f"cross_entropy: label_dtype {dt!r}", fix=f"use one of {', '.join(LABEL_DTYPES)}")
    M, N = x.shape
    t = rng.integers(N, size=M)
    ign = np.zeros(M, dtype=bool)
    if policy is None and M > 1:
        ign = rng.random(M) < 0.25
        ign[rng.integers(M)] = True
        if ign.all():
            ign[rng.integers(M)] = False
    elif policy == "first":
        t[:] = 0
    elif policy == "last":
        t[:] = N - 1
    elif policy == "argmax":
        t = np.argmax(np.where(np.isnan(x), -np.inf, x), axis=1)
    elif policy == "argmin":
        t = np.argmin(np.where(np.isnan(x), np.inf, x), axis=1)
    elif policy == "finite":
        fin = np.isfinite(x)
        score = np.where(fin, rng.random((M, N)), -1.0)
        t = np.argmax(score, axis=1)
    elif policy == "ignore_nonfinite":
        ign = ~np.isfinite(x).all(axis=1)
    elif policy == "all_ignored":
        ign[:] = True
    elif policy == "half_ignored":  # every other row, the last one counted: a mean over M / 2 rows
        ign = np.arange(M) % 2 == (M % 2)
    if ignore_index(params) is None:  # a kernel without an ignore index: every label a class
        return t.astype(_dt.numpy_dtype(dt))
    t = np.where(ign, ignore_index(params), t)
    return t.astype(_dt.numpy_dtype(dt))


def _peak(rng):
    """N(0, 1) rows with one logit raised by 25 at a random place: the label there holds almost all
    the mass (loss ~ N·e^-25), the case where the budget's kappa comes from the input, not the loss."""
    def fn(shape, dtype):
        v = rng.standard_normal(shape)
        pos = rng.integers(shape[1], size=shape[0])
        v[np.arange(shape[0]), pos] += 25.0
        return _fit(v, dtype)
    return fn


def _nonfinite_rows(rng):
    """N(0, 1) rows; some rows hold a NaN, some a +inf (these rows get labelled ignore_index)."""
    def fn(shape, dtype):
        v = rng.standard_normal(shape)
        M = shape[0]
        for i in range(M):
            if i % 2 == 0:
                v[i, rng.integers(shape[1])] = np.nan if i % 4 == 0 else np.inf
        return _fit(v, dtype)
    return fn


def _masked(rng):
    """About half of each row -inf, at least one finite logit per row."""
    def fn(shape, dtype):
        v = rng.standard_normal(shape)
        mask = rng.random(shape) < 0.5
        mask[np.arange(shape[0]), rng.integers(shape[1], size=shape[0])] = False
        return _fit(np.where(mask, -np.inf, v), dtype)
    return fn


CASES = (
    OpCase("ce_label_first", "label at class 0 (first element: off-by-one and tail handling)", 4, 1000, _normal,
           policy="first"),
    OpCase("ce_label_last", "label at class N - 1 (last element, past a tile boundary)", 4, 1000, _normal,
           policy="last"),
    OpCase("ce_label_at_max", "label at a dominant logit: loss ~ 1e-9, the error of lse is relative to max|x|",
           4, 256, _peak, policy="argmax", quick=True),
    OpCase("ce_neg_inf_logits", "-inf logits (masked vocabulary), label on a finite logit", 4, 256, _masked,
           dtype_ok=_holds_inf, policy="finite"),
    OpCase("ce_ignored_nonfinite", "ignored rows holding NaN/+inf must still give exactly 0", 4, 128,
           _nonfinite_rows, dtype_ok=_holds_inf, policy="ignore_nonfinite", quick=True),
    OpCase("ce_vocab_32000", "vocabulary row of 32000 (Llama): long online loops", 2, 32000, _normal, fixed_m=True),
    OpCase("ce_masked_prefix_40000", "the first 33,000 of 40,000 logits -inf, the label on a finite one: a tile of "
           "only -inf before the first finite logit, where an unguarded online rescale gives exp(-inf - -inf) = NaN "
           "for a finite loss", 2, 40000, _masked_prefix, dtype_ok=_holds_inf, fixed_m=True, policy="finite"),
    OpCase("ce_masked_prefix_80000", "the first 70,000 of 80,000 logits -inf, the label on a finite one: a whole "
           "65,536-logit block of only -inf, whose block lse is NaN in a kernel splitting rows into 64K blocks and "
           "merging their lse after (flash-attn's and flash-linear-attention's cross entropy)", 2, 80000,
           lambda rng: _masked_prefix(rng, 0.875), dtype_ok=_holds_inf, fixed_m=True, policy="finite"),
    # Log-domain extremes: -log(softmax(x)[label]) gives +inf where the loss is finite (a few hundred).
    OpCase("ce_wide_rows_randn50", "logits randn·50 (rows spanning far past 104): -log(softmax[label]) gives +inf "
           "for labels far below the max", 4, 1000, wide_rows, dtype_ok=holds(400.0)),
    OpCase("ce_one_logit_200_above", "one logit 200 above the rest, labels elsewhere: loss about 200, past exp's "
           "range", 4, 1000, one_high_logit, dtype_ok=holds(210.0)),
    OpCase("ce_label_at_min_randn50", "label at the row's smallest logit of randn·50 rows: the largest finite loss "
           "(several hundred)", 4, 1000, wide_rows, dtype_ok=holds(400.0), policy="argmin"),
)


def _huge(rng):
    """N(0, 1)·1e4 rows (logits past any exp range): a softcap keeps them in [-cap, cap]; capping after the max
    (or not at all) leaves the loss in the thousands."""
    return lambda shape, dtype: _fit(rng.standard_normal(shape) * 1e4, dtype)


def _one_neg_inf(rng):
    """N(0, 1) rows with one -inf logit each (away from the label, policy 'finite'): the smoothing term's mean of
    -log p over all classes is +inf (PyTorch gives inf), the plain loss stays finite."""
    def fn(shape, dtype):
        v = rng.standard_normal(shape)
        v[np.arange(shape[0]), rng.integers(shape[1], size=shape[0])] = -np.inf
        return _fit(v, dtype)
    return fn


def _far_below_zero(rng):
    """N(0, 1) - 300 rows: every logit far below 0, so exp(x) underflows to 0 in float32 unless the row's own max is
    subtracted first; a running max started at 0 instead of -inf (max(0, x) as the reference point) or no max at all
    sums zeros, and lse = log 0 = -inf (FlagGems' online loop starts its max at 0)."""
    return lambda shape, dtype: _fit(rng.standard_normal(shape) - 300.0, dtype)


# Cases of the variants: they apply to every cross entropy kernel (a plain kernel must pass them too).


VARIANT_CASES = (
    OpCase("ce_all_ignored", "every row's label is ignore_index: per-row 0s; a mean over no row is NaN (PyTorch)",
           4, 128, _normal, policy="all_ignored", quick=True),
    OpCase("ce_half_ignored", "every other row ignored: a mean divides by the non-ignored count (M / 2), not M",
           8, 256, _normal, policy="half_ignored", quick=True),
    OpCase("ce_one_neg_inf", "one -inf logit per row, label elsewhere: label smoothing's mean of -log p is +inf",
           4, 256, _one_neg_inf, dtype_ok=_holds_inf, policy="finite"),
    OpCase("ce_huge_logits", "logits randn·1e4: softcap keeps them in [-cap, cap]; the plain loss is in the "
           "thousands", 4, 512, _huge, dtype_ok=holds(6e4)),
    OpCase("ce_far_below_zero", "logits randn - 300 (all far below 0), rows of 250 (a padded block): exp(x) "
           "underflows unless the row max is subtracted (a running max started at 0, not -inf, gives lse = -inf); "
           "with a softcap every logit caps to about -cap, and so does -inf padding capped before it is masked, "
           "which then counts as classes", 4, 250, _far_below_zero, dtype_ok=holds(310.0)),
)

CE_PARAMS = {"ignore_index": -100, "label_dtype": "int64", **VARIANT_PARAMS, "smoothing_classes": "all"}

OPDEF = Op(
    "cross_entropy", inputs={"x": "MxN", "labels": Tensor("M", "index", dtype="label_dtype", make=make_labels)},
    # lse: an optional extra output, the row's logsumexp that flash-attn's and Unsloth's kernels save for the backward
    outputs={"loss": "M", **ce_extra.OUTPUTS}, params={**CE_PARAMS, **ce_extra.PARAMS},
    contract_params=ce_extra.CONTRACTS, reference="references.cross_entropy",
    recipe={"loss": (1.0, "cross_entropy"), **ce_extra.RECIPE},
    kappas={"cross_entropy": k_cross_entropy, **ce_extra.kappas(_row_errors)},
    out_dtypes=("float32", "float16", "bfloat16"), float64=False, online_override=True, exp_family=True,
    invariants=check, cases=CASES + VARIANT_CASES,
)


SOFT_CASES = (
    OpCase("ce_soft_zero_at_neg_inf", "target 0 exactly at every -inf logit (masked vocabulary): 0·log 0 = 0 under "
           "zero_target='zero', NaN if computed as t·log_softmax", 4, 256, _masked, dtype_ok=_holds_inf,
           policy="zero_at_neg_inf", quick=True),
    OpCase("ce_soft_one_hot", "one-hot targets: the hard-label loss, the other N - 1 terms exactly 0", 4, 1000, _normal,
           policy="one_hot"),
    OpCase("ce_soft_label_at_max", "a dominant logit holding the target's mass: loss ~ 1e-9, lse's error relative to "
           "max|x|", 4, 256, _peak, policy="one_hot"),
    OpCase("ce_soft_vocab_32000", "vocabulary row of 32000 (Llama): long online loops", 2, 32000, _normal, fixed_m=True),
    OpCase("ce_soft_far_below_zero", "logits randn - 300, rows of 250: exp(x) underflows unless the row max is "
           "subtracted (a running max started at 0 gives lse = -inf); capped padding counts as classes", 4, 250,
           _far_below_zero, dtype_ok=holds(310.0)),
)

SOFT = Op(
    "cross_entropy_soft", inputs={"x": "MxN", "target": Tensor("MxN", "input", make=make_target)}, outputs={"loss": "M"},
    params={**VARIANT_PARAMS, "zero_target": "zero"},
    reference="references.cross_entropy_soft",
    recipe={"loss": (1.0, "cross_entropy_soft")}, kappas={"cross_entropy_soft": k_cross_entropy_soft},
    out_dtypes=("float32", "float16", "bfloat16"), float64=False, online_override=True, exp_family=True,
    invariants=check_soft, cases=SOFT_CASES,
    description="cross entropy against a target distribution per row (soft labels), PyTorch's probability targets",
)

# A batch of many short rows: kernels that pick rows per program from M (attorch's cross entropy takes 2 rows per
# program from M >= 2048 when N < 64) meet an odd M here; a reduction that sizes its partials by M // rows_per_program
# (floor) loses the last row, which the batch's one value shows (no per-row output would).
REDUCED_CASES = (
    OpCase("ce_many_short_rows", "2049 rows of 16 classes: rows per program chosen from M (2 from 2048 rows), M odd: "
           "per-program partials sized M // rows drop the last row from the mean", 2049, 16, _normal, fixed_m=True),
)

REDUCED = Op(
    "cross_entropy_reduced",
    inputs={"x": "MxN", "labels": Tensor("M", "index", dtype="label_dtype", make=make_labels)}, outputs={"loss": "1"},
    params={**CE_PARAMS, "reduction": "mean", "empty_mean": "nan"},
    reference="references.cross_entropy_reduced",
    recipe={"loss": (1.0, "cross_entropy_reduced")}, kappas={"cross_entropy_reduced": k_cross_entropy_reduced},
    out_dtypes=("float32", "float16", "bfloat16"), float64=False, online_override=True, exp_family=True,
    invariants=check_reduced, cases=CASES + VARIANT_CASES + REDUCED_CASES,
    description="cross entropy summed ('sum') or averaged over the non-ignored rows ('mean', NaN over none)",
)
