"""Quantized outputs compared in the quantized domain (docs/tolerances.md, "Quantized outputs").

The reference gives t, the exact pre-quantization value (value / scale, float64), and the budget gives E, an
absolute bound on the kernel's error in t before it rounds (derived or hand model, in the units of t). The kernel's
element must be saturate(round(t')) for some t' in [t - E, t + E]: since saturate(round(·)) is monotone that is every
format value from q(t - E) to q(t + E). Away from a rounding boundary (a midpoint between two neighbours, or the
saturation bound) both ends are one value and the element must match it exactly; where the band holds a boundary the
neighbour across it is allowed too. Nothing else is: no ULP slack, since the format's step is far above the kernel's
error.

A dynamic scale (an output, e.g. ``scale[M]``) is compared first, in its own dtype and budget (verifier.judge.compare).
Rows (or groups of a row, for a per-group scale [M, N/G]) whose scale is within budget are then judged against t
and E under the *kernel's* scale (the op's
``Quantized.rescale``), so a legal scale difference does not turn into findings on y; rows whose scale is wrong are
judged against the reference's t (the scale's own finding says why).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.judge.compare import Comparison, NonFinite, compare
from verifier.numerics.quantized import QUANT_DTYPES, ROUNDINGS, fmt
from verifier.numerics.ulp import ulp_distance
from verifier.results.findings import Finding

__all__ = ["QElement", "QuantizedTensorComparison", "compare_quantized", "compare_op"]

WORST = 5
OTHER_MAX = {448.0: "e4m3fn", 57344.0: "e5m2", 127.0: "int8"}


@dataclass(frozen=True)
class QElement:
    """One quantized element: the kernel's value, the exact t, the allowed values (lo..hi), the budget E and why a
    value outside them is wrong."""

    index: tuple
    actual: float
    expected: float  # saturate(round(t)) under the declared rounding
    exact: float  # t
    lo: float
    hi: float
    budget: float  # E, in units of t
    steps: int  # grid steps between actual and expected
    why: str

    @property
    def ulps(self) -> float:
        return float(self.steps)

    @property
    def allowed(self) -> float:
        return 0.0 if self.lo == self.hi else 1.0

    @property
    def excess(self) -> float:
        return float(self.steps)

    def allowed_text(self) -> str:
        return f"{self.lo!r}" if self.lo == self.hi else f"{self.lo!r} or {self.hi!r}"


@dataclass(frozen=True)
class QuantizedTensorComparison:
    """A quantized output's comparison: the TensorComparison interface (ok, message, findings) for one class of
    outputs that is compared exactly outside the rounding-boundary band."""

    name: str
    dtype: str
    shape: tuple
    numel: int
    mismatched: int
    nonfinite_mismatched: int
    worst: tuple  # of QElement: the wrong elements first (most steps off), or the closest calls when all are right
    nonfinite: tuple  # of NonFinite
    rounding_mode: str = "nearest_even"
    in_band: int = 0  # elements whose band holds a boundary (two values allowed)
    rescaled_rows: int = 0  # rows judged under the kernel's own (legally different) scale
    rounding = None  # no rounding statistics: the quantized value is exact or one of two

    max_ulps = property(lambda self: float(max((e.steps for e in self.worst), default=0)))
    values_ok = property(lambda self: self.mismatched == 0 and self.nonfinite_mismatched == 0)
    rounding_ok = property(lambda self: True)
    ok = property(lambda self: self.values_ok)

    @property
    def percent(self) -> float:
        return 100.0 * (self.mismatched + self.nonfinite_mismatched) / max(self.numel, 1)

    def message(self) -> str:
        shape = "x".join(map(str, self.shape)) or "scalar"
        head = "exact in the quantized domain" if self.values_ok else "NOT the quantization of its exact value"
        lines = [f"Output {self.name!r} ({self.dtype}, {shape}, quantized, {self.rounding_mode}) is {head}:",
                 f"  Mismatched elements: {self.mismatched + self.nonfinite_mismatched} / {self.numel} "
                 f"({self.percent:.1f}%); {self.in_band} within their budget of a rounding boundary (two values "
                 f"allowed)" + (f"; {self.rescaled_rows} rows judged under the kernel's own scale"
                                if self.rescaled_rows else "")]
        for e in self.worst:
            mark = "WRONG" if e.why else "ok"
            lines.append(f"    at {list(e.index)}: actual {e.actual!r}, t = {e.exact!r} ± {e.budget:.3g}, allowed "
                         f"{e.allowed_text()}: {mark}{': ' + e.why if e.why else ''}")
        for n in self.nonfinite:
            lines.append(f"    at {list(n.index)}: actual {n.actual!r}, expected {n.expected!r} ({n.why})")
        return "\n".join(lines)

    def relabeled(self, index) -> "QuantizedTensorComparison":
        """The same comparison with every element index mapped by ``index`` (judging some rows: the real rows)."""
        return replace(self, worst=tuple(replace(e, index=index(e.index)) for e in self.worst),
                       nonfinite=tuple(replace(n, index=index(n.index)) for n in self.nonfinite))

    def findings(self, base: dict) -> list[Finding]:
        out = []
        if self.mismatched:
            w = self.worst[0]
            out.append(Finding(
                check="value", score=float(w.steps), **base,
                message=(f"{self.name}: {self.mismatched}/{self.numel} quantized elements "
                         f"({100.0 * self.mismatched / self.numel:.1f}%) are not saturate(round(t)) within t's budget; "
                         f"at {list(w.index)}: actual {w.actual!r}, t = {w.exact!r} (budget {w.budget:.3g}), allowed "
                         f"{w.allowed_text()}: {w.why}")))
        if self.nonfinite_mismatched:
            n = self.nonfinite[0]
            out.append(Finding(
                check="nan-inf", score=float(self.nonfinite_mismatched), **base,
                message=(f"{self.name}: {self.nonfinite_mismatched}/{self.numel} NaN mismatches; first at "
                         f"{list(n.index)}: actual {n.actual!r}, expected {n.expected!r} ({n.why})")))
        return out


TRUNCATED_SHARE = 0.2  # of the judged elements one step toward zero: truncation is off on about half of them (a
# fraction of 0.5 or more), an intermediate rounded to a narrower dtype on a few near a boundary (aiter's norm rounded
# to bf16 before its fp8 scale: 1.6%), which "(truncated?)" would misname


def _why(f, a: float, q: float, t: float, E: float, mode: str, truncation_like: bool = True) -> str:
    """Why ``a`` is not an allowed quantization of t (q: the expected value)."""
    if np.isnan(a):
        return "NaN where t is a number"
    if abs(a) < f.qmax and abs(a) in OTHER_MAX and abs(t) - E > abs(a):
        return f"saturated at {abs(a):g} but {f.dtype}'s max is {f.qmax:g} ({OTHER_MAX[abs(a)]}'s max was used)"
    if mode == "toward_zero":
        if a == float(f.quantize(t, "nearest_even")) and a != q:
            return "rounded to nearest where truncation toward zero was declared"
    else:
        other = "half_away" if mode == "nearest_even" else "nearest_even"
        if a == float(f.quantize(t, other)) and a != q:
            return {"half_away": "rounded half-away from zero where nearest-even was declared (t is a tie)",
                    "nearest_even": "rounded half-to-even where half-away was declared (t is a tie)"}[other]
    steps = int(f.steps(a, q))
    if steps == 1:
        d = abs(t - float(f.nearest_boundary(t, mode)))
        toward_zero = abs(a) < abs(q) and np.sign(a) * np.sign(q) >= 0
        where = f"{d / E:.1f} budgets from any boundary" if E > 0 else f"t is exact and {d:.3g} from any boundary"
        hint = " (truncated?)" if truncation_like and mode != "toward_zero" else ""
        return f"one step off{' toward zero' + hint if toward_zero else ''}, {where}"
    return f"{steps} steps off"


def compare_quantized(name: str, actual, t, E, dtype: str, rounding: str = "nearest_even",
                      rescaled_rows: int = 0) -> QuantizedTensorComparison:
    """``actual`` (the kernel's output, in ``dtype``) against t (float64) with the error bound E (units of t)."""
    if rounding not in ROUNDINGS:
        raise UsageError(f"quantized output {name!r}: rounding {rounding!r}",
                         fix=f"declare the param as one of {', '.join(ROUNDINGS)}")
    a = _dt.to_numpy(actual)
    got = _dt.canonical(a.dtype)
    if got != dtype or dtype not in QUANT_DTYPES:
        raise UsageError(f"output {name!r} is {got} but the kernel's quantized output dtype is {dtype}",
                         fix=f"pass the kernel's output as written, in {dtype} (do not convert it)")
    f = fmt(dtype)
    t = np.asarray(t, dtype=np.float64)
    E = np.broadcast_to(np.nan_to_num(np.asarray(E, dtype=np.float64), nan=np.inf, posinf=np.inf), t.shape)
    a64 = a.astype(np.float64)
    q = f.quantize(t, rounding)
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = f.quantize(t - E, rounding), f.quantize(t + E, rounding)
        lo, hi = np.fmin(lo, q), np.fmax(hi, q)  # E = inf: every value
        lo = np.where(np.isinf(E), -128.0 if dtype == "int8" else -f.qmax, lo)  # every finite value of the format
        hi = np.where(np.isinf(E), f.qmax, hi)  # (int8's -128 too, which symmetric saturation never writes)
    judged = ~np.isnan(t) | (dtype != "int8")  # int8 has no NaN: a NaN t (a NaN input) is not judged
    tnan = np.isnan(t)
    nonfin_bad = judged & (np.isnan(a64) != tnan)
    with np.errstate(invalid="ignore"):
        value_bad = judged & ~tnan & ~np.isnan(a64) & ((a64 < lo) | (a64 > hi))
    steps = np.where(value_bad, f.steps(np.where(np.isnan(a64), 0, a64), np.where(np.isnan(q), 0, q)), 0)
    # listed: the wrong elements (most steps first); else the elements closest to a boundary
    if value_bad.any():
        order = np.argsort(-(steps + value_bad).ravel(), kind="stable")[:min(WORST, int(value_bad.sum()))]
    else:
        with np.errstate(invalid="ignore"):
            dist = np.where(tnan, np.inf, np.abs(t - f.nearest_boundary(t, rounding)))
        order = np.argsort(dist.ravel(), kind="stable")[:min(WORST, t.size)]
    worst = []
    with np.errstate(invalid="ignore"):
        toward_zero = value_bad & (steps == 1) & (np.abs(a64) < np.abs(q)) & (np.sign(a64) * np.sign(q) >= 0)
    truncation_like = int(toward_zero.sum()) >= TRUNCATED_SHARE * max(1, int((judged & ~tnan).sum()))
    for k in order:
        idx = tuple(int(i) for i in np.unravel_index(int(k), a.shape))
        why = _why(f, a64[idx], float(q[idx]), float(t[idx]), float(E[idx]), rounding, truncation_like) \
            if value_bad[idx] else ""
        worst.append(QElement(idx, float(a64[idx]), float(q[idx]), float(t[idx]), float(lo[idx]), float(hi[idx]),
                              float(E[idx]), int(steps[idx]), why))
    nonfinite = tuple(NonFinite(tuple(int(i) for i in idx), float(a64[tuple(idx)]), float(q[tuple(idx)]),
                                "NaN where t is a number" if np.isnan(a64[tuple(idx)]) else "a number where t is NaN")
                      for idx in np.argwhere(nonfin_bad)[:WORST])
    return QuantizedTensorComparison(
        name=name, dtype=dtype, shape=tuple(a.shape), numel=int(a.size), mismatched=int(value_bad.sum()),
        nonfinite_mismatched=int(nonfin_bad.sum()), worst=tuple(worst), nonfinite=nonfinite, rounding_mode=rounding,
        in_band=int((judged & (lo != hi)).sum()), rescaled_rows=rescaled_rows)


def _sub(ref, names):
    return replace(ref, exact={k: ref.exact[k] for k in names}, rounded={k: ref.rounded[k] for k in names
                                                                         if k in ref.rounded},
                   bound={k: ref.bound[k] for k in names if k in ref.bound},
                   dtypes={k: ref.dtypes[k] for k in names if k in ref.dtypes})


def _per_element(ok, t):
    """A per-row ([M]) or per-group ([M, N/G]: a scale per G consecutive elements of a row) flag, one per element
    of t [M, N]."""
    if ok.ndim == t.ndim and ok.shape[-1] not in (1, t.shape[-1]):
        return np.repeat(ok, t.shape[-1] // ok.shape[-1], axis=-1)
    return ok.reshape(ok.shape + (1,) * (t.ndim - ok.ndim))


def _zero_scale(r, inverse: bool):
    """Where a reference scale stands for an all-zero row (group) without a floor: 0, or an inverse's qmax / 0."""
    return np.isposinf(r) if inverse else r == 0


def _free_zero_scales(op, outputs: dict, ref, plain, params: dict) -> dict:
    """Per dynamic scale output: where the reference's scale is 0 (floor 0 on a zero row or group: x is all zeros;
    a declared inverse: infinite there) and the kernel wrote a finite scale > 0 of its own (aiter's
    ``where(scale == 0, 1, scale)``, CTranslate2's inverse 1): any such scale dequantizes y = 0 to x exactly, so it
    is not compared with the reference's; y is judged under it as under any kernel scale within budget (t = 0: y
    must be 0)."""
    free = {}
    for qd in op.quantized.values():
        if qd.scale not in plain or qd.scale in free:
            continue
        r = np.asarray(ref.exact[qd.scale], dtype=np.float64)
        s_k = np.asarray(_dt.to_numpy(outputs[qd.scale]), dtype=np.float64)
        mask = _zero_scale(r, params.get(qd.form_param) == "inverse") & np.isfinite(s_k) & (s_k > 0)
        if mask.any():
            free[qd.scale] = mask
    return free


def _with_kernel_scales(ref, outputs: dict, free: dict):
    """``ref`` with the kernel's own scale where ``free`` says it stands for the reference's 0."""
    exact, rounded = dict(ref.exact), dict(ref.rounded)
    for name, mask in free.items():
        s_k = _dt.to_numpy(outputs[name])
        exact[name] = np.where(mask, s_k.astype(np.float64), np.asarray(ref.exact[name], dtype=np.float64))
        if name in rounded:
            r = np.asarray(rounded[name])
            rounded[name] = np.where(mask, s_k.astype(r.dtype), r)
    return replace(ref, exact=exact, rounded=rounded)


def compare_op(op, outputs: dict, ref, errs, dtypes, params: dict, inputs: dict,
               context: Optional[dict] = None) -> Comparison:
    """Every output of an op with quantized outputs: the plain ones (a dynamic scale) as compare() does, then each
    quantized one in its domain, under the kernel's scale on the rows where that scale is within its budget."""
    from verifier.judge.tolerance import Errors

    from verifier.numerics.quantized import resolve_params

    params = resolve_params(op, {**op.params, **params}, dtypes.output)
    plain = [k for k in op.outputs if k not in op.quantized]
    free = _free_zero_scales(op, outputs, ref, plain, params)
    if free:  # the kernel's own scale stands for the reference's 0 there: y is judged under it below (x / s = 0)
        ref = _with_kernel_scales(ref, outputs, free)
    got = {}
    if plain:
        sub_errs = Errors(base={k: errs.base[k] for k in plain}, E={k: errs.E[k] for k in plain},
                          dtypes={k: errs.dtypes[k] for k in plain}, ctx=errs.ctx)
        sub_ref = _sub(ref, plain)
        budgets = sub_errs.budget(sub_ref)
        pc = compare({k: outputs[k] for k in plain}, sub_ref, budgets, dtypes.output, context=context, errors=sub_errs)
        got = {t.name: t for t in pc.tensors}
    for k, qd in op.quantized.items():
        t, E = np.asarray(ref.exact[k], dtype=np.float64), np.asarray(errs.E[k], dtype=np.float64)
        rows = 0
        if qd.scale in plain:  # a reference scale of 0 (floor 0, a zero row or group; a declared inverse's inf):
            # x is all zeros there, and any finite y dequantizes to y·0 = y / inf = 0, exactly x (a guarded reciprocal writes 0, an unguarded 0·inf = NaN
            # clamped by fmaxf / fminf writes qmax: both harmless); a NaN y poisons the GEMM that consumes it, so NaN
            # stays a finding (t = 0 is a number).
            zero = _per_element(_zero_scale(np.asarray(ref.exact[qd.scale], dtype=np.float64),
                                            params.get(qd.form_param) == "inverse"), t)
            t, E = np.where(zero, 0.0, t), np.where(zero, np.inf, E)
        if qd.scale in plain:  # a dynamic scale: the kernel's own, where it is within budget
            s_k = _dt.to_numpy(outputs[qd.scale]).astype(np.float64)
            d = ulp_distance(_dt.to_numpy(outputs[qd.scale]), ref.rounded[qd.scale], ref.dtypes[qd.scale])
            ok = (d <= budgets[qd.scale]) & np.isfinite(s_k) & (s_k > 0)
            if ok.any():
                xs = {n: np.asarray(_dt.to_numpy(v), dtype=np.float64) for n, v in inputs.items()}
                tk, Ek = qd.rescale(xs, params, np.where(ok, s_k, ref.exact[qd.scale]), errs.ctx)
                okr = _per_element(ok, t)
                t, E = np.where(okr, tk, t), np.where(okr, Ek, E)
                rows = int((ok & (s_k != np.asarray(ref.rounded[qd.scale], dtype=np.float64))).sum())
        mode = params.get(qd.rounding_param, "nearest_even")
        got[k] = compare_quantized(k, outputs[k], t, E, ref.dtypes[k], mode, rescaled_rows=rows)
    ctx = tuple(sorted((context or {}).items(), key=lambda kv: kv[0]))
    return Comparison(tuple(got[k] for k in op.outputs), ctx)
