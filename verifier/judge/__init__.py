"""The one judge: outputs of one input against the certified reference, within the per-element budget, and the
op's invariants (reference -> budget -> compare -> invariants). Every step that judges values calls it (the values
step, the Hypothesis step through it, determinism for kernels declared nondeterministic, ``check_output``).

It knows nothing of how a kernel is launched: :class:`Criteria` carries what judging needs of a kernel (op,
dtypes, math mode, tolerance overrides, online rescale, whether it may flush subnormals), and
:meth:`Criteria.of` reads it off a spec. A kernel that may flush subnormals (declared or inferred
``subnormals="flush"``, verifier.declare.contracts) whose output fails is judged again against the reference of
the flushed inputs, flushed: a flushing kernel passes, one that keeps subnormals passes against the plain one.

``rows=`` judges some rows only (the large-index case: the rows on both sides of the 32-bit wrap and the last
ones): the op is row-wise, so those rows of the inputs and outputs (numpy arrays or verifier.inputs.layouts
SparseRows) are judged as an input of their own, with the reference for them alone, and the findings name the
real rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.declare.contracts import flush, flushes, has_subnormals
from verifier.declare.kernels import Dtypes
from verifier.judge import invariants as _inv
from verifier.judge import quantized as _quantized
from verifier.judge import tolerance as _tol
from verifier.judge.argmax import compare_argmax
from verifier.judge.compare import Comparison, compare
from verifier.judge.dense_selection import compare_dense
from verifier.judge.kept import compare_kept
from verifier.judge.selection import compare_selection
from verifier.numerics.violations import Violation
from verifier.ops import get_op


@dataclass(frozen=True)
class Criteria:
    """What the judge needs to know of a kernel variant."""

    op: str
    dtypes: Dtypes
    math_mode: str = "precise"
    overrides: dict = field(default_factory=dict)  # the spec's tolerance overrides, merged by max
    online: bool = False  # rescales a running max / sum (online softmax)
    flushes: bool = False  # may flush float32 subnormals (contracts)
    params: dict = field(default_factory=dict)  # the op's params (defaults filled in)

    @classmethod
    def of(cls, spec, dt: Dtypes) -> "Criteria":
        return cls(op=spec.op, dtypes=dt, math_mode=spec.math_mode, overrides=dict(spec.tolerance),
                   online=spec.online, flushes=flushes(spec), params=spec.op_params())


@dataclass
class Judgement:
    comparison: Comparison
    violations: list  # verifier.numerics.violations.Violation, one per broken invariant
    reference: object  # the references.Reference the outputs were compared with
    undeclared: tuple = ()  # facts of an undeclared contract param the outputs showed (a warning each)
    unjudged: tuple = ()  # outputs whose every bound held 0 (E >= |t|): nothing was judged there (a warning each)

    @property
    def ok(self) -> bool:
        return self.comparison.ok and not self.violations

    @property
    def only_rounding(self) -> bool:
        """Every value within budget and every invariant held; only the rounding statistics failed."""
        return not self.ok and not self.violations and all(t.values_ok for t in self.comparison.tensors)


def _judge_once(c: Criteria, xs: dict, outputs: dict, ref, invariants: bool, context) -> Judgement:
    op = get_op(c.op)
    unjudged = ()  # the plain comparison's outputs whose bounds say nothing (_unbounded)
    if op.selection is not None:  # picks of the top k: tie-aware (verifier.judge.selection, dense_selection)
        comparison = (compare_dense if op.selection.dense else compare_selection)(op, c, xs, outputs, context)
    elif op.kept is not None:  # keeps the top k in place: its kept set tie-aware (verifier.judge.kept)
        comparison = compare_kept(op, c, xs, outputs, context)
    elif op.argmax is not None:  # each row's argmax: exact, tie-aware (verifier.judge.argmax)
        comparison = compare_argmax(op, c, xs, outputs, context)
    elif op.quantized:  # compared in the quantized domain (verifier.judge.quantized)
        errs = _tol.errors(c.op, c.dtypes, c.math_mode, xs, ref, c.params, overrides=c.overrides, online=c.online)
        comparison = _quantized.compare_op(op, outputs, ref, errs, c.dtypes, c.params, xs, context)
    else:
        errs = _tol.errors(c.op, c.dtypes, c.math_mode, xs, ref, c.params, overrides=c.overrides, online=c.online)
        comparison = compare(outputs, ref, errs.budget(ref), c.dtypes.output, context=context, errors=errs)
        unjudged = _unbounded(ref, errs.E, c.dtypes)
    violations = _inv.check(c.op, xs, outputs, c.dtypes, c.params, math_mode=c.math_mode, online=c.online,
                            out_ulps=_tol.declared_output_ulps(c.op, c.dtypes, c.math_mode, c.overrides)) \
        if invariants else []
    return Judgement(comparison, violations, ref, unjudged=unjudged)


def _unbounded(ref, E: dict, dtypes) -> tuple:
    """A message per output whose every finite nonzero reference element t has a bound E >= |t|: the band [t - E,
    t + E] holds 0 and both signs, so a kernel writing 0 (or anything of that size) passes and the output says
    nothing. The rounding model gives such bounds where the declared accumulation dtype cannot hold the computation
    (float16 sums of 1024 squares: N·u ~ 1, or past its range); the value check is then a warning, not a pass."""
    out = []
    for t, bound in E.items():
        exact = np.asarray(ref.exact[t], dtype=np.float64)
        b = np.broadcast_to(np.asarray(bound, dtype=np.float64), exact.shape)
        live = np.isfinite(exact) & (exact != 0)
        with np.errstate(invalid="ignore"):
            vacuous = live & ~(b < np.abs(exact))  # NaN or inf bounds count as vacuous too
        if live.any() and vacuous[live].all():
            hint = ("; declare float32 accumulation if the kernel accumulates in it"
                    if _dt.canonical(dtypes.acc) in ("float16", "bfloat16") else "")
            out.append(f"{t}: every value's error bound under {_dt.canonical(dtypes.acc)} accumulation is at least the "
                       f"value itself (the rounding model cannot bound this input: N·u near 1, a sum past the "
                       f"accumulation's range, or a cancellation the output amplifies), so 0 or a value of either "
                       f"sign passes and none of its {int(live.sum())} values was really judged{hint}")
    return tuple(out)


def _take(c: Criteria, inputs: dict, outputs: dict, rows) -> tuple:
    """Rows ``rows`` of every per-row input (not the vectors w, b, nor a static scale[1]) and of every output."""
    op = get_op(c.op)
    pick = np.asarray(rows, dtype=np.int64)
    xs = {k: (v[pick] if op.per_row(k) else v) for k, v in inputs.items()}
    return xs, {k: v[pick] for k, v in outputs.items()}


def _relabel(verdict: Judgement, rows) -> Judgement:
    """Findings of a judgement of some rows, speaking of the real rows: the comparison's element indices and the
    violations' rows are mapped back; a violation's message says its row numbers count the judged rows."""
    rows = np.asarray(rows, dtype=np.int64)

    def index(i):
        return (int(rows[i[0]]),) + tuple(i[1:]) if len(i) else i

    tensors = tuple(t.relabeled(index) for t in verdict.comparison.tensors)
    note = f" [row numbers count the judged rows {rows.tolist()}]"
    violations = [Violation(v.invariant, rows[np.asarray(v.rows, dtype=np.int64)], v.message + note, v.score)
                  for v in verdict.violations]
    return Judgement(replace(verdict.comparison, tensors=tensors), violations, verdict.reference)


def judge(c: Criteria, inputs: dict, outputs: dict, *, invariants: bool = True, ref=None,
          context: Optional[dict] = None, rows=None) -> Judgement:
    """``outputs`` (numpy, the output dtype; every output of the op) of ``inputs`` (numpy, the input dtype)
    judged under ``c``. ``invariants=False`` compares only; ``ref``: a reference already computed for these
    inputs (repeated runs of one input); ``context``: the comparison message's context (its repro line);
    ``rows``: judge these rows only (inputs and outputs may then be SparseRows holding at least them)."""
    if rows is not None:
        from verifier.ops.row_numbers import judged_rows

        xs, ys = _take(c, inputs, outputs, rows)
        with judged_rows(rows, total=np.shape(inputs["x"])[0]):  # a row's place in the batch (softmax's causal / ALiBi query index) is its own
            return _relabel(judge(c, xs, ys, invariants=invariants, ref=ref, context=context), rows)
    from references import reference  # mpmath: imported on the first judged input, not with the module

    xs = {k: _dt.to_numpy(v) for k, v in inputs.items()}
    if ref is None:
        ref = reference(c.op, xs, c.params, c.dtypes.output)
    verdict = _judge_once(c, xs, outputs, ref, invariants, context)
    if get_op(c.op).contract_params:
        verdict = _undeclared_contract(c, xs, outputs, verdict, invariants, context)
    if verdict.ok or not c.flushes or not has_subnormals(list(xs.values()) + list(outputs.values())):
        return verdict
    fx = {k: flush(v) for k, v in xs.items()}
    flushed_ref = reference(c.op, fx, c.params, c.dtypes.output)
    flushed_ref = replace(flushed_ref, rounded={k: flush(v) for k, v in flushed_ref.rounded.items()},
                          exact={k: flush(v) for k, v in flushed_ref.exact.items()})
    again = _judge_once(c, fx, {k: flush(v) for k, v in outputs.items()}, flushed_ref, invariants, context)
    return again if again.ok else verdict


def _undeclared_contract(c: Criteria, xs: dict, outputs: dict, verdict: Judgement, invariants: bool,
                         context) -> Judgement:
    """An op's contract params the kernel left undeclared (``Op.contract_params``: softmax's ``masked_rows``, whose
    reference with None follows the first value): where the outputs follow some of their values on an input where
    the values differ, that is the verdict, with a warning naming each param to declare. Several open params are
    tried together (a softmax writing zeros for a dead row and -inf for its lse follows two), fewest changed first.
    A kernel that declared a value is held to it (the first judgement). Only a failed judgement, or NaN outputs
    (the first value's rows), look."""
    from itertools import product

    from references import reference

    op = get_op(c.op)
    if verdict.ok and not any(np.isnan(np.asarray(v, dtype=np.float64)).any() for v in outputs.values()):
        return verdict
    shown = {}  # the open params whose values give different references on this input
    for k, contract in op.contract_params.items():
        if c.params.get(k) is not None or not contract.open_for(c.params):
            continue
        refs = [reference(c.op, xs, {**c.params, k: v}, c.dtypes.output) for v in contract.values]
        if not all(_same(refs[0], r) for r in refs):
            shown[k] = contract.values
    if not shown:
        return verdict
    combos = sorted(product(*shown.values()), key=lambda vs: sum(v != vals[0] for v, vals in zip(vs, shown.values())))
    for vs in combos:
        p = dict(zip(shown, vs))
        first = all(v == vals[0] for v, vals in zip(vs, shown.values()))
        again = verdict if first and verdict.ok else _judge_once(
            replace(c, params={**c.params, **p}), xs, outputs, reference(c.op, xs, {**c.params, **p}, c.dtypes.output),
            invariants, context)
        if again.ok:
            return replace(again, undeclared=verdict.undeclared + tuple(
                f"the outputs follow {k}={v!r}, which the kernel does not declare: declare params={{{k!r}: {v!r}}} "
                f"(one of {', '.join(map(repr, shown[k]))}) so that the other is a finding" for k, v in p.items()))
    return verdict


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(a.rounded[t], dtype=np.float64), np.asarray(b.rounded[t], dtype=np.float64),
                              equal_nan=True) for t in a.rounded)


def check_output(op: str, inputs: dict, actual, dtypes, math_mode: str = "precise", params: Optional[dict] = None,
                 overrides: Optional[dict] = None, *, context: Optional[dict] = None) -> Comparison:
    """Reference + budget + comparison in one call (``inputs`` as numpy arrays in the input dtype, or tensors;
    ``actual`` a dict name -> output, or the one output of a one-output op)."""
    c = Criteria(op=op, dtypes=dtypes, math_mode=math_mode, overrides=dict(overrides or {}),
                 params={**get_op(op).params, **(params or {})})
    if not isinstance(actual, dict):
        (only,) = get_op(op).outputs
        actual = {only: actual}
    actual = {k: _dt.to_numpy(v) for k, v in actual.items()}
    return judge(c, inputs, actual, invariants=False, context=context).comparison


__all__ = ["Criteria", "Judgement", "judge", "check_output"]
