"""Reference-free invariants of correct outputs, checked per row.

``check(op, inputs, outputs, dtypes, params)`` returns one :class:`Violation` per broken invariant,
naming the offending rows, the worst row's value and its bound. The checks of each op live in its
module under verifier/ops/ (``OpDef.invariants``); this module validates and dispatches. Every bound is derived from the
standard rounding model, never tuned (derivations next to each check):

* u = unit roundoff of the accumulation dtype; k roundings compound to gamma(k) = k·u / (1 - k·u)
  (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1).
* Intrinsic errors (exp, division, rsqrt, log) come from ``verifier.numerics.errmodel.INTRINSICS`` in the
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
reduce_sum.{finite,sum}; cross_entropy.{ignored,finite,nonneg,lower,logsumexp}.
"""
from __future__ import annotations

import numpy as np

from verifier import dtypes as _dt
from verifier.declare.kernels import Dtypes
from verifier.errors import UsageError
from verifier.numerics.errmodel import invariant_ctx
from verifier.numerics.violations import Violation
from verifier.numerics.violations import f64 as _f64
from verifier.ops import get_op
from verifier.results.findings import Finding

__all__ = ["Violation", "check", "violations_to_findings"]


def check(op: str, inputs: dict, outputs: dict, dtypes: Dtypes, params: dict | None = None, *,
          math_mode: str | None = None, online: bool | None = None, out_ulps: float = 1.0) -> list[Violation]:
    """All invariants of ``op`` that ``outputs`` break (an empty list when none).

    ``inputs`` / ``outputs``: numpy arrays (ml_dtypes included) or torch tensors, named as in
    ``verifier.ops``. ``math_mode`` (one of spec.MATH_MODES) and ``online`` (the kernel rescales a
    running softmax sum) tighten the bounds; ``None`` assumes the worst case of each. ``out_ulps``: the output
    rounding the kernel declares (its tolerance base_ulps; verifier.judge.tolerance.declared_output_ulps).
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
        if v.shape != opdef.shape_of(t, M, N, params):
            raise UsageError(f"invariants.check({op!r}): output {t!r} has shape {v.shape}, expected "
                             f"{opdef.shape_of(t, M, N, params)}", fix="pass the kernel's outputs unreshaped")
    c = invariant_ctx(dtypes, math_mode, online, out_ulps)
    if opdef.invariants is None:  # an op declared without any: the battery's invariant cell says so
        return []
    inp = {t: _f64(inputs[t]) for t in opdef.inputs}
    with np.errstate(invalid="ignore", over="ignore"):
        if isinstance(opdef.invariants, (list, tuple)):
            return [v for inv in opdef.invariants for v in _declared(opdef, inv, inp, ys, params, c, M)]
        return opdef.invariants(x_raw, inp, ys, params, dtypes, c)


def _declared(opdef, inv, inp, ys, params, c, M) -> list[Violation]:
    """One ``Invariant`` of a declared op: rows with finite inputs whose measure exceeds the bound."""
    from verifier.errors import SpecError
    from verifier.numerics.violations import violation

    ys = _Outputs(ys, set(opdef.optional_outputs) - set(ys))
    try:
        value = np.broadcast_to(np.asarray(inv.measure(inp, ys, params), dtype=np.float64), (M,))
        bound = inv.bound(inp, ys, params, c) if callable(inv.bound) else inv.bound
        bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), (M,))
    except _Absent:  # a property of an optional output this kernel does not write (merge_attn_states' lse)
        return []
    except Exception as e:
        raise SpecError(f"op {opdef.name!r}: invariant {inv.name!r} raised {type(e).__name__}: {e}",
                        fix=f"measure(inputs, outputs, params) and bound(inputs, outputs, params, ctx) must return one "
                            f"number per row (op declared at {opdef.origin})") from None
    finite = np.ones(M, dtype=bool)
    for t, a in inp.items():
        if opdef.per_row(t):
            finite &= np.isfinite(a.reshape(M, -1)).all(axis=1)
    bad = finite & ~(value <= bound)
    return violation(f"{opdef.name}.{inv.name}", bad, value, bound, inv.what or inv.name)


class _Absent(KeyError):
    """An invariant read an optional output the kernel's variant does not have."""


class _Outputs(dict):
    """The outputs an invariant sees; reading an absent optional output raises _Absent (the invariant is skipped)."""

    def __init__(self, ys, absent):
        super().__init__(ys)
        self.absent = absent

    def __missing__(self, name):
        raise (_Absent if name in self.absent else KeyError)(name)


_CONTEXT = ("kernel", "dtype", "input", "shape", "seed", "repro", "severity")


def violations_to_findings(violations, **context) -> list[Finding]:
    """One 'invariant' Finding per Violation; ``context`` fills Finding fields (kernel, dtype,
    input, shape, seed, repro, severity)."""
    unknown = set(context) - set(_CONTEXT)
    if unknown:
        raise UsageError(f"violations_to_findings: unknown context {sorted(unknown)}", fix=f"use {_CONTEXT}")
    return [Finding(check="invariant", message=f"{v.invariant}: {v.message}", score=v.score, **context)
            for v in violations]
