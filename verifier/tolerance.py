"""Per-element error budgets, in ULPs of the output dtype, derived from rounding-error analysis.

One typed table, ``TABLE[(op, output dtype, accumulation dtype, math mode)] -> {tensor: Tol}``.
A ``Tol`` names the output rounding allowance (``base_ulps``), the error formula (``kappa``) and
the intrinsic-function bounds of the math mode (``Intrinsics``). ``budget`` evaluates the formula
per element on the actual input, so ill-conditioned elements get a larger allowance and
well-conditioned ones stay tight:

    budget_i = base_ulps + E_i / ulp_out(max(|y_i| - E_i, 0))

``E_i`` is an absolute bound on the kernel's error *before* it rounds to the output dtype (sums in
any order, intrinsic errors, condition of the input); dividing by the smallest output spacing
in [|y_i| - E_i, |y_i| + E_i] turns it into a bound on ``ulp_distance`` (which counts representable
values). ``base_ulps`` = 1: the kernel's own final rounding plus the reference's rounding cost at
most one representable step. The derivations are in docs/tolerances.md (``table_markdown`` writes
its table); error counts are in units of u = unit roundoff of the accumulation dtype, combined as
gamma(k) = k*u / (1 - k*u) (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.ops import get_op
from verifier.spec import MATH_MODES, Dtypes
from verifier.ulp import ulp

__all__ = ["Intrinsics", "Tol", "TABLE", "INTRINSICS", "lookup", "budget", "baseline_budget", "table_markdown"]


def _cr(ulps_from_correctly_rounded: float) -> float:
    """A bound of c ulps from the correctly rounded result is c + 1/2 ulps from the exact value,
    i.e. a relative error of at most (2c + 1)·u (one ulp of v is at most 2u|v|)."""
    return 2.0 * ulps_from_correctly_rounded + 1.0


@dataclass(frozen=True)
class Intrinsics:
    """Error bounds of the math functions a math mode uses, relative to the exact value, in units
    of u_acc (so a correctly rounded operation is 1).

    exp: exp(t) at t = 0; exp_arg: extra relative error per unit |t| (argument-dependent part).
    log_abs / log_rel: absolute error of log(s) is (log_abs + log_rel·|log s|)·u.
    flush: subnormal results flushed to zero (underflow costs up to the smallest normal) rather
    than gradual underflow (up to the smallest subnormal).
    """

    exp: float
    exp_arg: float
    div: float
    rsqrt: float
    log_abs: float
    log_rel: float
    flush: bool
    source: str


# fp32 bounds. Sources: CUDA C++ Programming Guide, "Mathematical Functions" appendix (single
# precision standard functions and intrinsics tables); PTX ISA 9.x, sections 9.7.3.8 (div),
# 9.7.3.15 (sqrt), 9.7.3.16 (rsqrt), 9.7.3.20 (lg2), 9.7.3.21 (ex2).
_F32 = {
    # expf 2 ulp; x/y IEEE (-prec-div=true); rsqrtf 2 ulp >= 1/sqrtf(x) with sqrtf correctly
    # rounded (-prec-sqrt=true) = 2 roundings; logf 1 ulp; subnormals kept (-ftz=false).
    "precise": Intrinsics(exp=_cr(2), exp_arg=0.0, div=_cr(0), rsqrt=max(_cr(2), 2 * _cr(0)),
                          log_abs=0.0, log_rel=_cr(1), flush=False,
                          source="CUDA guide: expf 2 ulp, x/y 0 ulp, sqrtf 0 ulp, rsqrtf 2 ulp, logf 1 ulp"),
    # -use_fast_math: __expf 2 + floor(|1.173 x|) ulp; __fdividef / div.approx 2 ulp; rsqrtf 2 ulp or
    # sqrt.approx (rel 2^-23 = 2u) then div.approx (2 ulp); __logf 2^-21.41 absolute on [0.5, 2],
    # else 3 ulp; -ftz=true.
    "fast": Intrinsics(exp=_cr(2), exp_arg=2 * 1.173, div=_cr(2), rsqrt=max(_cr(2), 2.0 + _cr(2)),
                       log_abs=2.0 ** (-21.41 + 24), log_rel=_cr(3), flush=True,
                       source="CUDA guide intrinsics: __expf 2+floor(|1.173x|) ulp, __fdividef 2 ulp, "
                              "__logf 2^-21.41 abs on [0.5,2] else 3 ulp; PTX sqrt.approx rel 2^-23"),
    # Triton (NVIDIA): tl.exp on fp32 is ex2.approx.f32(x * f32(log2 e)): ex2.approx 2 ulp from the
    # correctly rounded 2^t over the full range; rounding log2(e) and the product perturbs t by
    # 2u|t|, i.e. exp(x) by 2u|x| relatively. Division '/' is div.full.f32 (2 ulp); rsqrt is
    # libdevice rsqrtf (2 ulp) or sqrt.approx + div.full; log via lg2.approx (2^-22 absolute on
    # (0.5, 2), else relative 2^-22) times ln 2 (two more roundings), or libdevice logf (1 ulp).
    # Flush-to-zero assumed (the worse case).
    "triton_approx": Intrinsics(exp=_cr(2), exp_arg=2.0, div=_cr(2), rsqrt=max(_cr(2), 2.0 + _cr(2)),
                                log_abs=2.0 ** (-22 + 24) * math.log(2), log_rel=max(4.0 + 2.0, _cr(1)),
                                flush=True,
                                source="PTX ISA: ex2.approx.f32 2 ulp, div.full.f32 2 ulp, lg2.approx.f32 "
                                       "2^-22; Triton lowers fp32 exp to ex2.approx.f32(x*log2e)"),
}
# fp64: CUDA guide double-precision table: exp 1 ulp, x/y IEEE, rsqrt 1 ulp, log 1 ulp.
_F64_PRECISE = Intrinsics(exp=_cr(1), exp_arg=0.0, div=_cr(0), rsqrt=max(_cr(1), 2 * _cr(0)),
                          log_abs=0.0, log_rel=_cr(1), flush=False,
                          source="CUDA guide (double): exp 1 ulp, x/y 0 ulp, rsqrt 1 ulp, log 1 ulp")

INTRINSICS: dict[tuple[str, str], Intrinsics] = {
    **{("float32", mode): i for mode, i in _F32.items()},
    ("float64", "precise"): _F64_PRECISE,
}


@dataclass(frozen=True)
class Tol:
    """Budget recipe for one output tensor: ``base_ulps`` (output rounding, in output ULPs), the
    error formula ``kappa`` (a key of ``_KAPPA``) and the math mode's intrinsic bounds."""

    base_ulps: float
    kappa: str
    math: Intrinsics


# Which formula, and how many output-rounding ULPs, for each output of each op. An exact result
# (max of the row, integer sum) is rounded exactly like the reference: base 0, no error term.
_RECIPES: dict[str, dict[str, tuple[float, str]]] = {
    "softmax": {"y": (1.0, "softmax")},
    "log_softmax": {"y": (1.0, "log_softmax")},
    "online_softmax_stats": {"m": (0.0, "exact"), "l": (1.0, "online_l")},
    "rmsnorm": {"y": (1.0, "rmsnorm")},
    "layernorm": {"y": (1.0, "layernorm")},
    "fused_add_rmsnorm": {"y": (1.0, "add_rmsnorm_y"), "residual": (1.0, "add_residual")},
    "reduce_sum": {"y": (1.0, "sum")},
}

_FLOAT_OUT_F32ACC = ("float32", "float16", "bfloat16")


def _build_table() -> dict[tuple[str, str, str, str], dict[str, Tol]]:
    table = {}
    combos = [(out, "float32", mode) for out in _FLOAT_OUT_F32ACC for mode in MATH_MODES]
    combos.append(("float64", "float64", "precise"))
    for op, recipe in _RECIPES.items():
        for out, acc, mode in combos:
            intr = INTRINSICS[(acc, mode)]
            table[(op, out, acc, mode)] = {t: Tol(b, k, intr) for t, (b, k) in recipe.items()}
    # Sums accumulated in a 16-bit float (half2 / bf162 arithmetic; fp8 inputs summed in f16): the same
    # any-order sum bound, with u of the accumulation dtype. Only reduce_sum has such kernels.
    for acc in ("float16", "bfloat16"):
        for mode in MATH_MODES:
            table[("reduce_sum", acc, acc, mode)] = {"y": Tol(1.0, "sum", _F32[mode])}
    # The softmax family with its row sum held in the 16-bit I/O dtype (PyTorch's CPU log_softmax for
    # f16/bf16 rounds the sum to the I/O dtype): the same formulas with u of that dtype; the intrinsic
    # constants stay the fp32 ones (in units of the larger u they only over-count).
    for op in ("softmax", "log_softmax"):
        for acc in ("float16", "bfloat16"):
            for mode in MATH_MODES:
                table[(op, acc, acc, mode)] = {t: Tol(b, k, _F32[mode]) for t, (b, k) in _RECIPES[op].items()}
    # Integer sums (int8 or int32 in, int32 out, int32 accumulation) are exact in any mode.
    for mode in MATH_MODES:
        table[("reduce_sum", "int32", "int32", mode)] = {"y": Tol(0.0, "exact", _F32[mode])}
    return table


TABLE: dict[tuple[str, str, str, str], dict[str, Tol]] = _build_table()


def lookup(op: str, out: str, acc: str, math_mode: str) -> dict[str, Tol]:
    """The table entry, or a UsageError naming the entries that exist."""
    get_op(op)
    out, acc = _dt.canonical(out), _dt.canonical(acc)
    if math_mode not in MATH_MODES:
        raise UsageError(f"unknown math mode {math_mode!r}", fix=f"use one of {', '.join(MATH_MODES)}")
    key = (op, out, acc, math_mode)
    if key not in TABLE:
        have = sorted({(o, a) for (p, o, a, m) in TABLE if p == op and m == math_mode})
        listing = ", ".join(f"output {o} with {a} accumulation" for o, a in have)
        raise UsageError(
            f"no tolerance for op {op!r} with output {out}, accumulation {acc}, math mode {math_mode!r}",
            fix=f"declare a supported combination: {listing}",
        )
    return TABLE[key]


# --------------------------------------------------------------------------------------------
# Error formulas. Each returns E (absolute error bound before output rounding, same shape as the
# output) from float64 inputs, the exact outputs, params and the Tol's constants.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    u: float  # unit roundoff of the accumulation dtype
    eta: float  # worst underflow error of one operation (smallest normal if flushed, else subnormal)
    c_in: float  # 1 when the input dtype is not exactly representable in the accumulation dtype
    u_res: float  # unit roundoff of the dtype the residual is stored in (fused_add_rmsnorm)
    intr: Intrinsics
    online: bool  # the kernel rescales running sums (online softmax): add the rescale roundings
    N: int


def _gamma(k, u):
    k = np.asarray(k, dtype=np.float64)
    ku = k * u
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ku < 1, ku / (1 - ku), np.inf)


def _mul(g, v):
    """g·v with 0 where v is 0 (an exactly-zero output, e.g. exp(-inf), has no error even if g is inf)."""
    with np.errstate(invalid="ignore"):
        return np.where(v == 0, 0.0, g * v)


def _softmax_parts(x, c, *, weights):
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
        s_units = np.sum(_mul(e_units, weights), axis=-1, keepdims=True) + (c.N - 1)
    if c.online:
        # each running-sum rescale by exp(m_old - m_new) costs one exp and one multiply; at most
        # N-1 rescales (every new element a new maximum). Their argument errors telescope into d.
        s_units = s_units + (c.N - 1) * (c.intr.exp + 1.0)
    return m, d, e_units, s_units


def _row_softmax(x):
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=-1, keepdims=True)
        e = np.exp(x - m)
        return e / np.sum(e, axis=-1, keepdims=True)


def _k_softmax(x, y, p, c):
    _, _, e_units, s_units = _softmax_parts(x, c, weights=y)
    k = e_units + s_units + c.intr.div
    # two operations may underflow (exp, then the division): each errs by at most eta.
    return _mul(_gamma(k, c.u), np.abs(y)) + 2 * c.eta


def _k_log_softmax(x, y, p, c):
    # y = (x - m) - log(s). Absolute error: the subtraction u|x - m|; log(s(1+σ)) = log s + σ,
    # σ = gamma(sum units); the log intrinsic; the final subtraction u|y|; kernels computing
    # x - (m + log s) round m + log s once more: u|m + log s|. Underflowed exp terms lose at most
    # N·eta of s >= 1.
    w = _row_softmax(x)
    m, d, _, s_units = _softmax_parts(x, c, weights=w)
    with np.errstate(over="ignore", invalid="ignore"):
        log_s = np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))
    sigma = _gamma(s_units, c.u) + c.N * c.eta
    units = (d + c.c_in * (np.abs(x) + np.abs(m)) + c.intr.log_abs + c.intr.log_rel * np.abs(log_s)
             + np.abs(y) + np.abs(m + log_s))
    return sigma + c.u * units


def _k_online_l(x, l, p, c):
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        w = np.exp(x - np.max(x, axis=-1, keepdims=True)) / l[..., None]
    online = dataclasses.replace(c, online=True)  # rescaling is what this op does
    _, _, _, s_units = _softmax_parts(x, online, weights=w)
    return _mul(_gamma(s_units[..., 0], c.u), np.abs(l)) + c.N * c.eta


def _rms_units(h, eps, c, k_h):
    """Relative error units of r = 1/sqrt(mean(h²) + eps) for elements with k_h units of error each.

    mean(h²) + eps: squares 1 + 2·k_h, any-order sum N-1, scaling by 1/N 2 (1/N rounded, product),
    adding eps 1 and eps rounded to acc 1; errors are relative to mean(h²) <= mean(h²) + eps.
    Underflowed squares cost N·eta of the sum, eta of the mean. rsqrt halves the relative error of
    its argument and adds its own.
    """
    ms = np.mean(h * h, axis=-1, keepdims=True)
    v_units = (c.N - 1) + 1 + 2 * k_h + 2 + 2
    with np.errstate(divide="ignore", invalid="ignore"):
        v_rel = _gamma(v_units, c.u) + c.eta / (ms + eps)
    return v_rel / 2 / c.u + c.intr.rsqrt


def _k_rmsnorm(x, y, p, c):
    r_units = _rms_units(x, p["eps"], c, c.c_in)
    # y = x·r·w: two products; x and w converted to acc.
    return _mul(_gamma(r_units + 2 + 2 * c.c_in, c.u), np.abs(y)) + c.eta


def _k_add_residual(x, h, p, c):
    return _gamma(1 + c.c_in, c.u) * np.abs(h) + c.eta


def _k_add_rmsnorm_y(x, y, p, c, h):
    # h = x + residual carries 1 unit (+ input conversion). Kernels may normalise the *stored*
    # residual, rounded to the output dtype (vLLM does): that moves h_i by u_out relatively and
    # the row's rms by at most u_out, i.e. y_i by 2·u_out — allowed, as either reading is correct.
    k_h = 1 + c.c_in
    r_units = _rms_units(h, p["eps"], c, k_h)
    k = r_units + 2 + k_h + c.c_in + 2 * c.u_res / c.u
    return _mul(_gamma(k, c.u), np.abs(y)) + c.eta


def _k_layernorm(x, y, p, c, w, b):
    """y = (x - mean)·rstd·w + b, for two-pass or Welford statistics.

    mean: any-order sum plus scaling errs by dmu <= gamma(N+1)·mean|x|. Two-pass variance
    sum((x - mean_hat)²)/N = var + dmu² (the cross term cancels since sum(x - mean) = 0), plus
    gamma(N+3)·(var + dmu²) for the squares and the sum. Welford's updating algorithm errs by about
    N·kappa·u relatively, kappa = sqrt(1 + mean²/var) (Chan, Golub & LeVeque 1983, "Algorithms for
    computing the sample variance"): both bounds are added so either algorithm passes, while the
    textbook E[x²] - E[x]² (error ~ N·kappa²·u) does not. Then rstd errs by half the relative error
    of var + eps plus rsqrt's own. Element i: |w_i|·rstd·(dmu + u|x_i - mean|) from the centred
    value, (rel(rstd) + 2 products)·|y_i - b_i|, and u|y_i| for adding b.
    """
    eps = p["eps"]
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    mean_abs = np.mean(np.abs(x), axis=-1, keepdims=True)
    dmu = _gamma(c.N + 1 + c.c_in, c.u) * mean_abs
    with np.errstate(divide="ignore", invalid="ignore"):
        welford = _gamma(c.N, c.u) * np.sqrt(var) * np.sqrt(var + mu * mu)
    dvar = dmu * dmu + _gamma(c.N + 3 + 2 * c.c_in, c.u) * (var + dmu * dmu) + welford
    dv = dvar + 2 * c.u * (var + eps)  # adding eps, eps rounded to acc
    with np.errstate(divide="ignore", invalid="ignore"):
        rstd = 1.0 / np.sqrt(var + eps)
        r_rel = 0.5 * dv / (var + eps) + c.intr.rsqrt * c.u
    centred = dmu * (1 + c.u) + c.u * np.abs(x - mu)
    return (np.abs(w) * rstd * centred
            + (r_rel + _gamma(2 + 2 * c.c_in, c.u)) * np.abs(y - b)
            + c.u * (np.abs(y) + c.c_in * np.abs(b)) + c.eta)


def _k_sum(x, y, p, c):
    # any order: |error| <= gamma(N-1)·sum|x_j| (Higham, eq. 4.4); flushed subnormal inputs add eta each.
    return _gamma(c.N - 1 + c.c_in, c.u) * np.sum(np.abs(x), axis=-1) + c.N * c.eta


def _k_exact(x, y, p, c):
    return np.zeros_like(y)


_KAPPA = {
    "softmax": _k_softmax, "log_softmax": _k_log_softmax, "online_l": _k_online_l, "rmsnorm": _k_rmsnorm,
    "layernorm": _k_layernorm, "add_rmsnorm_y": _k_add_rmsnorm_y, "add_residual": _k_add_residual,
    "sum": _k_sum, "exact": _k_exact,
}


def _merge_overrides(op: str, entry: dict[str, Tol], overrides) -> tuple[dict[str, float], bool]:
    """Per-output base_ulps after merging overrides by max, and the 'online' flag.

    Accepted: {"base_ulps": 4} (every output), {"y": {"base_ulps": 4}} (one output),
    {"online": True} (softmax / log_softmax kernels that rescale a running sum).
    """
    def number(where, val) -> float:
        try:
            v = float(val)
        except (TypeError, ValueError):
            v = float("nan")
        if not (v >= 0 and math.isfinite(v)):
            raise UsageError(f"tolerance override {where} is {val!r}", fix="give a finite number of ULPs >= 0")
        return v

    base = {t: tol.base_ulps for t, tol in entry.items()}
    online = False
    for key, val in (overrides or {}).items():
        if key == "base_ulps":
            v = number("base_ulps", val)
            base = {t: max(b, v) for t, b in base.items()}
        elif key == "online":
            if op not in ("softmax", "log_softmax"):
                raise UsageError(f"tolerance override 'online' does not apply to op {op!r}",
                                 fix="use it only for softmax / log_softmax kernels with an online normalizer")
            online = bool(val)
        elif key in entry:
            if not isinstance(val, dict) or set(val) - {"base_ulps"}:
                raise UsageError(f"tolerance override for output {key!r} must be {{'base_ulps': number}}, got {val!r}",
                                 fix=f"write tolerance={{'{key}': {{'base_ulps': 2}}}}")
            if "base_ulps" in val:
                base[key] = max(base[key], number(f"{key}.base_ulps", val["base_ulps"]))
        else:
            raise UsageError(f"unknown tolerance override {key!r} for op {op!r}",
                             fix=f"allowed keys: 'base_ulps', 'online', or an output name ({', '.join(entry)})")
    return base, online


def _exact_outputs(ref) -> dict:
    return {k: np.asarray(v, dtype=np.float64) for k, v in ref.exact.items()}


def budget(op: str, dtypes: Dtypes, math_mode: str, inputs: dict, ref, params: dict | None = None,
           overrides: dict | None = None) -> dict[str, np.ndarray]:
    """Allowed ULP distance (output dtype) per element of every output of ``op``.

    ``inputs``: numpy arrays in the input dtype; ``ref``: a references.Reference; ``params``: the
    op's params (defaults filled in); ``overrides``: the kernel spec's ``tolerance`` dict (merged by
    max: an override can raise the allowance, never lower it). Non-finite reference values get 0
    (they must be matched exactly).
    """
    opdef = get_op(op)
    entry = lookup(op, dtypes.output, dtypes.acc, math_mode)
    base, online = _merge_overrides(op, entry, overrides)
    params = {**opdef.params, **(params or {})}
    missing = [t for t in opdef.inputs if t not in inputs]
    if missing:
        raise UsageError(f"budget for {op!r}: inputs {missing} are missing", fix=f"pass {list(opdef.inputs)}")
    xs = {k: np.asarray(_dt.to_numpy(v), dtype=np.float64) for k, v in inputs.items()}
    exact = _exact_outputs(ref)
    acc = dtypes.acc
    fin_acc = _dt.finfo(acc) if _dt.is_float(acc) else None
    any_tol = next(iter(entry.values()))
    if fin_acc is not None:
        u = _dt.unit_roundoff(acc)
        eta = float(fin_acc.smallest_normal) if any_tol.math.flush else float(fin_acc.smallest_subnormal)
        c_in = 1.0 if (_dt.is_float(dtypes.input) and _dt.finfo(dtypes.input).nmant > fin_acc.nmant) else 0.0
    else:
        u, eta, c_in = 0.0, 0.0, 0.0
    out_dt = {t: _dt.canonical(getattr(ref, "dtypes", {}).get(t, dtypes.output)) for t in entry}
    res_dt = out_dt.get("residual", dtypes.output)
    u_res = _dt.unit_roundoff(res_dt) if _dt.is_float(res_dt) else 0.0
    x = xs["x"]
    ctx = _Ctx(u=u, eta=eta, c_in=c_in, u_res=u_res, intr=any_tol.math, online=online, N=int(x.shape[-1]))

    out: dict[str, np.ndarray] = {}
    for t, tol in entry.items():
        if t not in exact:
            raise UsageError(f"reference for {op!r} has no output {t!r}", fix="pass the Reference computed for this op")
        y = exact[t]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if tol.kappa == "add_rmsnorm_y":
                E = _k_add_rmsnorm_y(x, y, params, ctx, xs["x"] + xs["residual"])
            elif tol.kappa == "layernorm":
                E = _k_layernorm(x, y, params, ctx, xs["w"], xs["b"])
            elif tol.kappa == "add_residual":
                E = _k_add_residual(x, xs["x"] + xs["residual"], params, ctx)
            else:
                E = _KAPPA[tol.kappa](x, y, params, ctx)
            E = np.broadcast_to(E, y.shape)
            spacing = ulp(np.maximum(np.abs(y) - E, 0.0), out_dt[t])
            b = base[t] + np.where(E > 0, E / spacing, 0.0)
        # Non-finite references must be matched exactly; a NaN bound (inf·0 in a formula) is not a
        # promise either way, so it is treated strictly too.
        out[t] = np.where(np.isfinite(y) & ~np.isnan(b), b, 0.0)
    return out


def baseline_budget(ref, baseline_outputs: dict, k: float = 2.0, dtype=None) -> dict[str, np.ndarray]:
    """Baseline-relative budget (FlashAttention / Liger style; off by default): each output may be
    at most ``k`` times as far from the correctly rounded reference as a baseline implementation's
    output (max over the tensor), and never less than the 1 ULP of output rounding."""
    from verifier.ulp import ulp_distance

    if not k >= 1:
        raise UsageError(f"baseline_budget: k = {k}", fix="use k >= 1 (the baseline's own error, times k)")
    out = {}
    for t, r in ref.rounded.items():
        if t not in baseline_outputs:
            raise UsageError(f"baseline_budget: baseline has no output {t!r}", fix=f"pass {list(ref.rounded)}")
        dt = dtype or _dt.canonical(np.asarray(r).dtype)
        d = ulp_distance(baseline_outputs[t], ref.exact[t], dt)
        fin = np.isfinite(d)
        worst = float(d[fin].max()) if fin.any() else 0.0
        out[t] = np.full(np.shape(r), max(k * worst, 1.0))
    return out


def table_markdown() -> str:
    """The table of docs/tolerances.md, one row per key (a test checks the doc contains it)."""
    rows = ["| op | output | accumulation | math mode | tensor: base ULPs + formula |", "|---|---|---|---|---|"]
    for (op, out, acc, mode), entry in TABLE.items():
        cell = "; ".join(f"{t}: {tol.base_ulps:g} + {tol.kappa}" for t, tol in entry.items())
        rows.append(f"| {op} | {out} | {acc} | {mode} | {cell} |")
    return "\n".join(rows) + "\n"
