"""Compare kernel outputs with a reference against per-element ULP budgets.

In the style of ``torch.testing``: :func:`compare` returns plain frozen data
(:class:`Comparison`), :func:`assert_close` raises one AssertionError with a readable message.
Outputs are compared in their own dtype (never converted); distances are ``verifier.numerics.ulp``
ULP distances to the correctly rounded reference. Non-finite mismatches (NaN where the
reference is a number or vice versa, inf of the wrong sign or where the reference is finite)
are reported apart from value mismatches.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.judge.rounding import FIX as ROUNDING_FIX
from verifier.judge.rounding import RoundingStats, rounding_stats
from verifier.numerics.ulp import round_to, ulp, ulp_distance
from verifier.results.findings import Finding

__all__ = ["Element", "NonFinite", "TensorComparison", "Comparison", "compare", "compare_tensor", "assert_close"]

WORST = 5  # elements listed per tensor
NONFINITE_LISTED = 5


@dataclass(frozen=True)
class Element:
    index: tuple
    actual: float
    expected: float  # reference rounded to the output dtype
    exact: float  # float64 reference
    ulps: float
    allowed: float

    @property
    def excess(self) -> float:
        return float(_excess(self.ulps, self.allowed))


@dataclass(frozen=True)
class NonFinite:
    index: tuple
    actual: float
    expected: float
    why: str


@dataclass(frozen=True)
class TensorComparison:
    name: str
    dtype: str
    shape: tuple
    numel: int
    mismatched: int  # finite elements over budget
    nonfinite_mismatched: int
    max_ulps: float  # over finite elements
    worst: tuple  # of Element: the largest ULP excess (distance / allowed), mismatched or not
    nonfinite: tuple  # of NonFinite: the first few
    rounding: Optional[RoundingStats] = None  # the rounding statistics, when compare() was given the errors

    @property
    def values_ok(self) -> bool:
        """Every element within its budget and every non-finite value matched."""
        return self.mismatched == 0 and self.nonfinite_mismatched == 0

    @property
    def rounding_ok(self) -> bool:
        return self.rounding is None or self.rounding.ok

    @property
    def ok(self) -> bool:
        return self.values_ok and self.rounding_ok

    @property
    def percent(self) -> float:
        return 100.0 * (self.mismatched + self.nonfinite_mismatched) / max(self.numel, 1)

    def message(self) -> str:
        shape = "x".join(map(str, self.shape)) or "scalar"
        head = "within budget" if self.values_ok else "NOT within its error budget"
        lines = [f"Output {self.name!r} ({self.dtype}, {shape}) is {head}:"]
        lines.append(f"  Mismatched elements: {self.mismatched + self.nonfinite_mismatched} / {self.numel} "
                     f"({self.percent:.1f}%)")
        if self.mismatched or self.values_ok:
            lines.append(f"  Over budget (finite): {self.mismatched}; worst elements (ULP distance vs allowed):")
            for e in self.worst:
                verdict = ">" if e.ulps > e.allowed else "<="
                lines.append(f"    at {list(e.index)}: actual {e.actual!r}, expected {e.expected!r} "
                             f"(exact {e.exact!r}): {e.ulps:g} ULP {verdict} allowed {e.allowed:.4g} ULP")
        if self.nonfinite_mismatched:
            lines.append(f"  NaN/inf mismatches: {self.nonfinite_mismatched}")
            for n in self.nonfinite:
                lines.append(f"    at {list(n.index)}: actual {n.actual!r}, expected {n.expected!r} ({n.why})")
        if not self.rounding_ok:
            lines.append(f"  Rounding: {self.rounding.describe()}")
        return "\n".join(lines)

    def findings(self, base: dict) -> list[Finding]:
        """A 'value' finding if values are over budget, a 'nan-inf' finding if non-finite values mismatch, a
        'rounding' finding if within budget but the rounding statistics exceed what the error model allows (a tensor
        over its budget is the value check's); ``base``: the Finding fields of the context."""
        out = []
        if self.mismatched:
            w = self.worst[0]
            out.append(Finding(
                check="value", score=w.excess, **base,
                message=(f"{self.name}: {self.mismatched}/{self.numel} elements ({100.0 * self.mismatched / self.numel:.1f}%) "
                         f"over their ULP budget; worst at {list(w.index)}: {w.ulps:g} ULP vs allowed "
                         f"{w.allowed:.4g} (actual {w.actual!r}, expected {w.expected!r})")))
        if self.nonfinite_mismatched:
            n = self.nonfinite[0]
            out.append(Finding(
                check="nan-inf", score=float(self.nonfinite_mismatched), **base,
                message=(f"{self.name}: {self.nonfinite_mismatched}/{self.numel} NaN/inf mismatches; first at "
                         f"{list(n.index)}: actual {n.actual!r}, expected {n.expected!r} ({n.why})")))
        if self.values_ok and not self.rounding_ok:
            st = self.rounding
            out.append(Finding(
                check="rounding", score=st.score, **base,
                message=(f"{self.name}: every element within its ULP budget, but {st.describe()} "
                         f"(docs/tolerances.md, 'Rounding statistics'). Fix: {ROUNDING_FIX}")))
        return out

    def relabeled(self, index) -> "TensorComparison":
        """The same comparison with every element index mapped by ``index`` (judging some rows: the real rows)."""
        return replace(self, worst=tuple(replace(e, index=index(e.index)) for e in self.worst),
                       nonfinite=tuple(replace(n, index=index(n.index)) for n in self.nonfinite))


@dataclass(frozen=True)
class Comparison:
    tensors: tuple  # of TensorComparison
    context: tuple = ()  # sorted (key, value) pairs of the context dict

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tensors)

    def __getitem__(self, name: str) -> TensorComparison:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def message(self) -> str:
        ctx = dict(self.context)
        parts = [t.message() for t in self.tensors if not t.ok] or [t.message() for t in self.tensors]
        if ctx.get("repro"):
            parts.append(f"Reproduce: {ctx['repro']}")
        return "\n".join(parts)

    def findings(self, **fields) -> list[Finding]:
        """One 'value' finding per tensor with values over budget, one 'nan-inf' finding per tensor
        with non-finite mismatches, one 'rounding' finding per tensor within its budget whose rounding statistics
        exceed what the error model allows (a tensor over its budget is the value check's). ``fields`` (kernel,
        dtype, input, shape, seed, repro) override those taken from the comparison's context."""
        ctx = dict(self.context)
        base = {k: ctx[k] for k in ("kernel", "dtype", "input", "shape", "seed", "repro") if k in ctx}
        base.update(fields)
        if base.get("shape") is not None:
            base["shape"] = tuple(base["shape"])
        return [f for t in self.tensors for f in t.findings(base)]


def _excess(d, allowed):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d == 0, 0.0, np.where(allowed > 0, d / np.where(allowed > 0, allowed, 1), np.inf))[()]


def _worst_first(flat, k: int):
    """Indices of the k largest of ``flat``, largest first, ties in index order: what a stable argsort of -flat
    gives, without sorting the whole output (a partition, then a sort of the few at or above the k-th value)."""
    if k <= 0:
        return []
    if k >= flat.size:
        return np.argsort(-flat, kind="stable")
    flat = np.where(np.isnan(flat), -np.inf, flat)  # a NaN sorts last there; here it would break the threshold
    kth = np.partition(flat, flat.size - k)[flat.size - k]  # the k-th largest value
    cand = np.flatnonzero(flat >= kth)  # ascending indices: a stable sort keeps ties in index order
    return cand[np.argsort(-flat[cand], kind="stable")][:k]


def _why(a: float, r: float) -> str:
    if np.isnan(a):
        return "NaN where the reference is a number"
    if np.isnan(r):
        return "a number where the reference is NaN"
    if np.isinf(a) and np.isinf(r):
        return "inf of the wrong sign"
    if np.isinf(a):
        return "inf where the reference is finite"
    return "finite where the reference is inf"


def through_zero(allowed, a64, exact, rounded, E, base, dtype) -> tuple:
    """(allowed, in_band) where the band [t - E, t + E] holds 0 (E >= |t|). The ULP budget there, E over the spacing
    at |t| - E = 0 (a subnormal one: some 2^100 ULPs), let any value at all pass (a gate sqrt(softplus(-inf)) = 0
    written as 5.0); a symmetric count of steps cannot hold the band either, since the steps through 0 to its far end
    are ~2^30 (the subnormals and tiny normals on both sides). So there: allowed is the steps to the band's end on
    t's side (base + those), and a value across 0 passes when it lies in the band itself, |a - t| <= E + base·ulp(a)
    (the kernel's value, within E of t, rounded once to the output)."""
    E = np.broadcast_to(np.asarray(E, dtype=np.float64), exact.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        cross = np.isfinite(exact) & np.isfinite(E) & (E > 0) & (E >= np.abs(exact))
    if not cross.any():
        return allowed, np.zeros(exact.shape, dtype=bool)
    t, Ec = exact[cross], E[cross]
    with np.errstate(invalid="ignore", over="ignore"):
        end = round_to(t + np.where(t < 0, -Ec, Ec), dtype)  # the band's end on t's side (t = 0: either)
        near = base + ulp_distance(end, np.asarray(_dt.to_numpy(rounded)).astype(np.float64)[cross], dtype)
        allowed = np.array(allowed, dtype=np.float64, copy=True)
        allowed[cross] = np.minimum(allowed[cross], near)
        band = np.zeros(exact.shape, dtype=bool)
        ac = a64[cross]
        band[cross] = np.isfinite(ac) & (np.abs(ac - t) <= Ec + base * ulp(np.abs(ac), dtype))
    return allowed, band


def past_band(allowed, a64, exact, rounded, E, base, dtype):
    """``allowed``, capped where a value lies outside its band [t - E, t + E] (E < |t|; through_zero has the rest):
    base + the steps from the reference to the farther of the band's rounded ends, fl(t - E) and fl(t + E). The
    budget counts the band in its finest spacing (at |t| - E) as if all of it were there, which for a band over many
    binades (a 16-bit accumulation: float16 sums of 1024 values near 1000, E = 999) is far more than the band holds:
    1.7e10 float32 steps, past inf (9.9e8 steps away), where the band [1, 1999] has 8.4e7 below 1000. The steps are
    counted either way as the budget's are (a ue8m0 scale, E = s/2, may be 2s: 2^23 steps up as s/2 is down)."""
    E = np.broadcast_to(np.asarray(E, dtype=np.float64), exact.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.isfinite(exact) & np.isfinite(E) & (E < np.abs(exact)) & ~np.isnan(a64) & ~(np.abs(a64 - exact) <= E)
    if not out.any():
        return allowed
    t, Eo = exact[out], E[out]
    r = np.asarray(_dt.to_numpy(rounded)).astype(np.float64)[out]
    with np.errstate(invalid="ignore", over="ignore"):
        steps = [ulp_distance(round_to(t + side * Eo, dtype), r, dtype) for side in (-1.0, 1.0)]
    allowed = np.array(allowed, dtype=np.float64, copy=True)
    allowed[out] = np.minimum(allowed[out], base + np.maximum(*steps))
    return allowed


def compare_tensor(name, actual, rounded, exact, budget, dtype, errors=None, bound=None) -> TensorComparison:
    """One output against its reference (``rounded``: certified rounding into ``dtype``, or None to round ``exact``)
    under ``budget`` ULPs per element; with ``errors``, its rounding statistics too."""
    a = _dt.to_numpy(actual)
    got = _dt.canonical(a.dtype)
    if got != dtype:
        raise UsageError(f"output {name!r} is {got} but the kernel's output dtype is {dtype}",
                         fix=f"pass the kernel's output as written, in {dtype} (do not convert it)")
    exact = np.asarray(exact, dtype=np.float64)
    if a.shape != exact.shape:
        raise UsageError(f"output {name!r} has shape {a.shape}, the reference {exact.shape}",
                         fix="pass the output tensor with the op's shape")
    allowed = np.broadcast_to(np.asarray(budget, dtype=np.float64), a.shape)
    allowed = np.where(np.isnan(allowed), 0.0, allowed)
    if rounded is None:  # the reference's certified rounding when it has one
        rounded = round_to(exact, dtype) if _dt.is_float(dtype) else exact
    dist = ulp_distance(a, rounded, dtype)
    with np.errstate(invalid="ignore"):
        r = np.asarray(_dt.to_numpy(rounded)).astype(np.float64)
        a64 = a.astype(np.float64)
    over = dist > allowed
    if errors is not None and name in errors.E and _dt.is_float(dtype):
        allowed, band = through_zero(allowed, a64, exact, rounded, errors.E[name], errors.base[name], dtype)
        ref_err = 0.0 if bound is None else np.asarray(bound, dtype=np.float64)  # the reference's own uncertainty
        allowed = past_band(allowed, a64, exact, rounded, errors.E[name] + ref_err, errors.base[name], dtype)
        allowed = np.where(band, np.maximum(allowed, dist), allowed)  # a value in the band: its own distance
        over = dist > allowed
    nonfin_involved = ~np.isfinite(a64) | ~np.isfinite(r)
    nonfin_bad = (np.isnan(a64) != np.isnan(r)) | (nonfin_involved & over)
    value_bad = over & ~nonfin_involved

    fin = ~nonfin_involved
    exc = np.where(fin, _excess(dist, allowed), -1.0)
    flat = exc.ravel()
    order = _worst_first(flat, min(WORST, int(fin.sum())))
    worst = []
    for f in order:
        idx = tuple(int(i) for i in np.unravel_index(int(f), a.shape))
        worst.append(Element(idx, float(a64[idx]), float(r[idx]), float(exact[idx]), float(dist[idx]),
                             float(allowed[idx])))
    nonfinite = []
    for idx in np.argwhere(nonfin_bad)[:NONFINITE_LISTED]:
        idx = tuple(int(i) for i in idx)
        nonfinite.append(NonFinite(idx, float(a64[idx]), float(r[idx]), _why(a64[idx], r[idx])))
    stats = None if errors is None else rounding_stats(a, rounded, exact, errors.E[name], bound, errors.base[name],
                                                       dtype, steps=dist)
    return TensorComparison(
        name=name, dtype=dtype, shape=tuple(a.shape), numel=int(a.size), mismatched=int(value_bad.sum()),
        nonfinite_mismatched=int(nonfin_bad.sum()), max_ulps=float(dist[fin].max()) if fin.any() else 0.0,
        worst=tuple(worst), nonfinite=tuple(nonfinite), rounding=stats)


def compare(actual, ref, budget, dtype, *, context: Optional[dict] = None, errors=None) -> Comparison:
    """Compare ``actual`` (dict name -> array/tensor, or one array for a one-output op) with ``ref``
    (a references.Reference; its float64 ``exact`` outputs are rounded to ``dtype`` here) under
    ``budget`` (dict name -> allowed ULPs per element, see verifier.judge.tolerance.budget).
    ``dtype``: the output dtype (a name, or a verifier.spec.Dtypes whose ``output`` is used). ``errors``
    (verifier.judge.tolerance.Errors, the parts of ``budget``): also compute the rounding statistics
    (verifier.judge.rounding) of every output."""
    dtype = _dt.canonical(getattr(dtype, "output", dtype))
    exact = dict(ref.exact)
    if not isinstance(actual, dict):
        if len(exact) != 1:
            raise UsageError(f"one array given but the reference has outputs {sorted(exact)}",
                             fix="pass a dict name -> array")
        (only,) = exact
        actual = {only: actual}
        if not isinstance(budget, dict):
            budget = {only: budget}
    missing = [t for t in exact if t not in actual]
    extra = [t for t in actual if t not in exact]
    if missing or extra:
        raise UsageError(f"outputs given {sorted(actual)} but the reference has {sorted(exact)}",
                         fix="pass exactly the op's outputs")
    nobudget = [t for t in exact if t not in budget]
    if nobudget:
        raise UsageError(f"no budget for outputs {nobudget}", fix="compute it with verifier.judge.tolerance.budget")
    rounded = dict(getattr(ref, "rounded", None) or {})
    # per-output dtypes from the reference (fused_add_rmsnorm stores 'residual' in the input dtype)
    dts = {t: _dt.canonical(d) for t, d in (getattr(ref, "dtypes", None) or {}).items()}
    bounds = dict(getattr(ref, "bound", None) or {})
    tensors = tuple(compare_tensor(t, actual[t], rounded.get(t), exact[t], budget[t], dts.get(t, dtype), errors,
                                    bounds.get(t)) for t in exact)
    ctx = tuple(sorted((context or {}).items(), key=lambda kv: kv[0]))
    return Comparison(tensors, ctx)


def assert_close(actual, ref, budget, dtype, *, context: Optional[dict] = None) -> None:
    """Raise one AssertionError (counts, worst elements, NaN/inf mismatches, repro line) unless
    every output is within its budget."""
    c = compare(actual, ref, budget, dtype, context=context)
    if not c.ok:
        raise AssertionError(c.message())
