"""Rounding statistics beside the per-element budget: over all elements of one output, the share not correctly
rounded and the mean signed error in output ULPs, each against what the kernel's error model allows.

A kernel inside its per-element budget can still round badly: truncating float32 to bfloat16 (dropping the low
bits) is within 1 ULP everywhere, yet misrounds about half of the elements, always toward zero; a weight rounded to
bfloat16 before the product costs half an ULP on every element. Both pass the budget and bias whatever sums them.

The model (docs/tolerances.md, "Rounding statistics"): the kernel computes ŷ_i with |ŷ_i - y_i| <= E_i (the
budget's error bound before output rounding, absolute) and rounds it to nearest. Its output differs from the
correctly rounded reference only if a rounding boundary (a midpoint between two output values) lies within E_i of
the exact y_i (E_i plus the reference's own uncertainty), which the exact value says: a correct kernel misrounds at
most the C elements that close to a boundary, and its mean signed error (each element counted at most one ULP either
way) is at most C/n. For an exact value spread evenly over an ULP, E[C] = sum min(1, 2·E_i/ulp_i): small for an
fp32-accumulated norm writing bf16. A margin of 4·sqrt(C) + 4 keeps a model that is tight somewhere from flagging a
correct kernel.

A kernel declaring ``base_ulps`` b > 1 (an intermediate rounded to the I/O dtype on purpose) may misround every
element, and its extra roundings may shift the mean by up to (b - 1)/2 ULP (one rounding shared by a whole row,
x·rstd, moves every element the same way): the allowances say so.

Per case and summed over the cases of a dtype (RoundingPool): a case of a row statistic has a few elements, which
the margin's constant alone lets misround; the sums are judged against the sums' allowances, and the misrounded
elements farther than 2E from every boundary (none for a correct kernel) against the margin's 4.

Counted: elements with a finite reference, a finite correctly rounded reference and a finite output (non-finite
ones are the value and nan-inf checks'), in float outputs narrower than float64 (a float64 reference is not
certified at ties).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.numerics.ulp import ulp, ulp_distance

__all__ = ["RoundingStats", "RoundingPool", "rounding_stats", "margin"]

FIX = ("round to nearest even when converting to the output dtype (__float2bfloat16_rn / __float2half_rn, "
       "tl's default cast, torch .to(); not truncation or a bit shift), and keep intermediates (x·rstd, "
       "offset + w, the residual sum) in fp32; an intermediate rounded to the I/O dtype on purpose is declared "
       "with tolerance={'base_ulps': 2}")


def margin(c: float) -> float:
    """Slack on top of a count c a correct kernel can reach: 4·sqrt(c) + 4."""
    return 4.0 * math.sqrt(max(c, 0.0)) + 4.0


@dataclass(frozen=True)
class RoundingStats:
    n: int  # elements counted
    misrounded: int  # output != correctly rounded reference
    allowed_misrounded: float
    bias: float  # mean signed error vs the correctly rounded reference, output ULPs (each element within +-1);
    # > 0: away from zero
    allowed_bias: float  # bound on |bias|
    extra: float  # declared extra roundings (base_ulps - 1, at least 0)
    at_risk: float = 0.0  # C: the elements a correct kernel may misround (within E of a rounding boundary)
    unexplained: int = 0  # misrounded elements farther than 2E from every boundary (a correct kernel makes none)
    pooled: bool = False  # summed over the cases of a dtype (RoundingPool): the unexplained count is judged too

    @property
    def share_ok(self) -> bool:
        return self.misrounded <= self.allowed_misrounded

    @property
    def bias_ok(self) -> bool:
        return abs(self.bias) <= self.allowed_bias

    @property
    def ok(self) -> bool:
        return self.share_ok and self.bias_ok

    @property
    def unexplained_ok(self) -> bool:
        """Misrounded elements outside the model's reach within the margin (judged on a pool's sums)."""
        return not self.pooled or self.extra > 0 or self.unexplained <= margin(0.0)

    @property
    def score(self) -> float:
        """How far past its allowance (1 = at it), the worse of the two."""
        s = self.misrounded / max(self.allowed_misrounded, 1e-300)
        b = abs(self.bias) / max(self.allowed_bias, 1e-300)
        u = self.unexplained / margin(0.0)
        return float(max(s if not self.share_ok else 0.0, b if not self.bias_ok else 0.0,
                         u if not self.unexplained_ok else 0.0))

    def describe(self) -> str:
        """What is wrong, in words (empty when ok)."""
        parts = []
        n = max(self.n, 1)
        if not self.share_ok:
            parts.append(f"{self.misrounded}/{self.n} elements ({100.0 * self.misrounded / n:.1f}%) are not "
                         f"correctly rounded where the error model allows at most {self.allowed_misrounded:.0f} "
                         f"({100.0 * self.allowed_misrounded / n:.1f}%)")
        if not self.bias_ok:
            way = "toward zero" if self.bias < 0 else "away from zero"
            parts.append(f"mean signed error {self.bias:+.3f} ULP (biased {way}) where the error model allows "
                         f"|mean| <= {self.allowed_bias:.3f} ULP")
        if not self.unexplained_ok:
            parts.append(f"{self.unexplained} of the {self.misrounded} elements not correctly rounded lie farther "
                         f"than twice the error bound E from every rounding boundary, where a correct kernel rounding to "
                         f"nearest misrounds none (allowed {margin(0.0):.0f}; mean signed error {self.bias:+.3f} ULP, "
                         f"{'toward' if self.bias < 0 else 'away from'} zero)")
        return "; ".join(parts)


def rounding_stats(actual, rounded, exact, E, ref_bound, base: float, dtype: str, steps=None):
    """The statistics of one output (None for outputs the check does not apply to: integer or float64 dtypes).

    ``actual``: the kernel's output (its dtype); ``rounded``: the certified correctly rounded reference;
    ``exact``: the float64 reference; ``E``: the absolute error bound before output rounding
    (verifier.judge.tolerance.errors); ``ref_bound``: the reference's absolute uncertainty (or None);
    ``base``: the output's base ULPs after the kernel's declarations; ``steps``: ulp_distance(actual, rounded) when
    the caller has it already (the comparison does)."""
    dtype = _dt.canonical(dtype)
    if not _dt.is_float(dtype) or dtype == "float64":
        return None
    a = _dt.to_numpy(actual)
    with np.errstate(invalid="ignore"):  # an unwritten element holds the harness's poison, a signalling NaN
        a64 = a.astype(np.float64)
    r64 = np.asarray(_dt.to_numpy(rounded)).astype(np.float64)
    y = np.asarray(exact, dtype=np.float64)
    e = np.broadcast_to(np.asarray(E, dtype=np.float64), y.shape)
    if ref_bound is not None:
        e = e + np.broadcast_to(np.asarray(ref_bound, dtype=np.float64), y.shape)
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(y) & np.isfinite(r64) & np.isfinite(a64) & ~np.isnan(e)
    n = int(keep.sum())
    extra = max(float(base) - 1.0, 0.0)
    if n == 0:
        return RoundingStats(0, 0, 0.0, 0.0, 0.0, extra)
    a, a64, r64, y, e = a[keep], a64[keep], r64[keep], y[keep], e[keep]
    steps = ulp_distance(a, r64.astype(a.dtype), dtype) if steps is None else np.asarray(steps)[keep]
    away = np.where(y != 0, np.sign(y), 1.0) * np.sign(a64 - r64)  # +1: farther from zero than the reference
    # Each element counts at most one ULP either way: a larger error is the per-element budget's business, and one
    # element with a loose bound (a flushed zero spans every subnormal) must not widen the allowance of all.
    signed = np.minimum(steps, 1.0) * away
    # The rounding boundaries around the correctly rounded value: half a spacing above and below it (the spacing
    # below a power of two is half the one above).
    ar, ay = np.abs(r64), np.abs(y)
    up = ar + ulp(ar, dtype) / 2
    down = ar - ulp(np.nextafter(ar, 0.0), dtype) / 2
    dist = np.minimum(np.abs(up - ay), np.abs(ay - down))
    C = float((e > dist).sum())  # the elements a correct kernel may misround
    # Misrounded though farther than 2E from every boundary: beyond the model even with its bound E doubled (E is
    # derived from documented intrinsic errors no run of ours measured on every GPU; the factor 2 keeps a bound off
    # by less than that from flagging a correct kernel, while a kernel truncating misrounds about half of all
    # elements wherever they lie).
    return replace(_stats(n, int((steps != 0).sum()), float(signed.sum()), C, extra),
                   unexplained=int(((steps != 0) & ~(2 * e > dist)).sum()))


def _stats(n: int, misrounded: int, signed: float, C: float, extra: float) -> RoundingStats:
    """The statistics of n elements with the allowances of the model: ``signed`` the sum of the signed errors, C the
    elements at risk, ``extra`` the declared extra roundings."""
    allowed_mis = float(n) if extra > 0 else min(C + margin(C), float(n))
    allowed_bias = min(C + margin(C), float(n)) / n + extra / 2
    return RoundingStats(n=n, misrounded=misrounded, allowed_misrounded=allowed_mis, bias=signed / n,
                         allowed_bias=allowed_bias, extra=extra, at_risk=C)


class RoundingPool:
    """The statistics of one output summed over the cases of one dtype. A case of a few rows (a row statistic, a
    loss: M elements) can never exceed the margin's 4 + 4·sqrt(C) alone, so a kernel truncating its row means to
    bfloat16 passed every case; the bound holds for any set of elements (a correct kernel misrounds none but those
    within E of a boundary), so the sums are judged against the sums' allowances. Only cases that passed alone are
    added (one that failed is reported as it is), and only results the kernel itself rounded: the Triton
    interpreter's truncating float32 -> bfloat16 conversion (verifier.launch.interpreter) is not the kernel's."""

    def __init__(self):
        self._sums: dict = {}  # output -> [n, misrounded, signed, C, extra, cases]
        self._failed: set = set()  # outputs some case already reported

    def add(self, name: str, st: Optional[RoundingStats], passed: bool) -> None:
        if st is None or st.n == 0:
            return
        if not passed:
            self._failed.add(name)
            return
        acc = self._sums.setdefault(name, [0, 0, 0.0, 0.0, 0.0, 0, 0])
        acc[0] += st.n
        acc[1] += st.misrounded
        acc[2] += st.bias * st.n
        acc[3] += st.at_risk
        acc[4] = max(acc[4], st.extra)
        acc[5] += 1
        acc[6] += st.unexplained

    def failing(self) -> list:
        """[(output, pooled RoundingStats, cases)] of the outputs whose sums exceed the allowances, in no case
        reported alone. Summed, the model's partition is judged too: a misrounded element farther than 2E from every
        rounding boundary is one a correct kernel cannot make (the model's count there is 0, so the margin's
        4·sqrt(0) + 4 is its allowance), unless the kernel declares an extra rounding."""
        out = []
        for name, (n, mis, signed, C, extra, cases, unexplained) in self._sums.items():
            st = replace(_stats(n, mis, signed, C, extra), unexplained=unexplained, pooled=True)
            if cases > 1 and name not in self._failed and not (st.ok and st.unexplained_ok):
                out.append((name, st, cases))
        return out
