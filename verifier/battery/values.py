"""The values step: one input through the value (ULPs against the certified reference, within the
per-element budget), rounding (verifier.judge.rounding: the share misrounded and the bias), invariant, nan-inf,
unwritten (poisoned outputs), out-of-range-write (guard bands) and input-clobbered (every input bit for bit before
and after the call) checks. A refusal inside supports() is a **refusal** finding, a Python exception on some shapes a
refusal, a CUDA fault a **crash** (verifier.declare.usercode decides). A finding on a case with a layout of its own
(verifier.inputs.layouts: strided rows, unaligned pointers, more than 2^31 elements) says what that layout suggests
and how to fix or declare it."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional

import numpy as np

from verifier.battery import gate
from verifier.constants import KERNEL_TIMEOUT_ENV
from verifier.declare import usercode
from verifier.declare.kernels import KernelSpec
from verifier.errors import Unsupported
from verifier.inputs import layouts as _lay
from verifier.judge import Criteria, judge
from verifier.judge.invariants import violations_to_findings
from verifier.judge.rounding import FIX as ROUNDING_FIX, RoundingPool
from verifier.launch import runner_for
from verifier.launch.harness import KernelFault, execute, same_bits, unwritten_summary
from verifier.launch.interpreter import ALL_NAN_ARG, ROUNDED, ROUNDED_FP8, all_nan_first, faithful_rounding, recording
from verifier.launch.row_owners import NotSparse
from verifier.results.findings import Finding
from verifier.results.kernel import KernelReport, crash_finding
from verifier.results.notes import case_not_run
from verifier.results.options import Options, repro_line


# What a finding on a case of each layout adds: what the layout suggests, and the fix or the declaration.
_HINTS = {
    _lay.STRIDED: (f"strided case: each tensor's rows lie a stride of their own apart (x's N + {_lay.ROW_PAD}, the "
                   f"op's next tensor's N + {2 * _lay.ROW_PAD}, ...) and the gaps hold the dtype's max (inputs) or the "
                   "poison (outputs); a kernel reading row r at r*N, taking one tensor's stride for another's, or "
                   "reading or writing past N, fails here. Fix: index each tensor's rows by its own row stride (CUDA: "
                   "pass 'x.stride', 'y.stride' in the launch args), or declare Contracts(layout='contiguous')"),
    _lay.UNALIGNED: (f"unaligned case: every tensor starts one element past a {_lay.ALIGN}-byte boundary. Fix: check "
                     "the pointers' alignment before vector loads (fall back to scalar loads), or declare "
                     "Contracts(alignment=16)"),
}


def evaluate(spec, run, dt, opts, xs, name: str = "", layout=None) -> tuple:
    """Run once and judge (verifier.judge): returns (outcome, judgement, faithful); ``faithful``: every float32 ->
    bfloat16 / float8 conversion rounded as the kernel asked (False where the Triton interpreter truncated them and
    the case passed, so was not replayed: its rounding statistics are the interpreter's). Raises gate.NotRun for a
    case the Triton interpreter cannot run faithfully (verifier.battery.gate.after_run): it is not judged."""
    with recording() as bf16_ops:
        try:
            outcome = _execute_in_turn(run, spec, xs, dt, opts.device, layout)
        except KernelFault as e:
            closed = gate.after_run(spec, dt, name, opts.device, fault=e)
            if closed is not None:
                raise gate.NotRun(closed) from None
            raise
        except NotSparse as e:  # a large case on the CPU: which programs own the judged rows could not be established
            raise gate.NotRun(gate.not_sparse(spec, dt, name, e.reason)) from None
    closed = gate.after_run(spec, dt, name, opts.device, bf16_ops=bf16_ops)
    if closed is not None:
        raise gate.NotRun(closed)
    verdict = judge(Criteria.of(spec, dt), xs, outcome.outputs, rows=outcome.rows)
    if ALL_NAN_ARG in bf16_ops and spec.interpreted(opts.device):
        # an argmax over an all-NaN slice took its last index, where compiled Triton's reduction order decides:
        # a failure that its first index does not show is no finding, and a pass that it does not show no pass
        with all_nan_first():
            replayed = execute(run, spec, xs, dt, spec.op_params(), opts.device, layout=layout)
        if judge(Criteria.of(spec, dt), xs, replayed.outputs, rows=replayed.rows).ok != verdict.ok:
            raise gate.NotRun(gate.all_nan_caveat(spec, dt, name))
    converted = sorted({ROUNDED, ROUNDED_FP8} & set(bf16_ops))
    if not verdict.ok and converted and spec.interpreted(opts.device):
        # the interpreter rounded float32 -> bfloat16 toward zero, or converted to float8 wrongly: replay as
        # compiled Triton converts
        with faithful_rounding():
            replayed = execute(run, spec, xs, dt, spec.op_params(), opts.device, layout=layout)
        again = judge(Criteria.of(spec, dt), xs, replayed.outputs, rows=replayed.rows)
        if again.ok and not verdict.only_rounding:
            raise gate.NotRun(gate.rounding_caveat(spec, dt, name, converted))
        # The interpreter truncates every such conversion, which only the rounding statistics see: the replay is
        # the kernel as compiled Triton rounds, judged as it stands.
        return replayed, again, True
    return outcome, verdict, not (converted and spec.interpreted(opts.device))


def _execute_in_turn(run, spec, xs, dt, device: str, layout):
    """execute(); a large case on a GPU in its turn at the memory (verifier.gpu.lease): beside the other kernels'
    large cases, and alone once more where that ran out of memory (out of memory alone too: gate.after_run says
    the case was not run)."""
    if layout is None or not layout.large or device != "cuda":
        return execute(run, spec, xs, dt, spec.op_params(), device, layout=layout)
    from verifier.gpu import lease

    with lease.shared():
        try:
            return execute(run, spec, xs, dt, spec.op_params(), device, layout=layout)
        except KernelFault as e:
            if gate.out_of_memory(e) is None:
                raise
    with lease.exclusive():
        return execute(run, spec, xs, dt, spec.op_params(), device, layout=layout)


def pooled_rounding(spec, dt, opts, report, pool: RoundingPool) -> None:
    """A 'rounding' finding for each output whose statistics, summed over the cases that each passed alone, exceed
    what the error model allows for the sum (verifier.judge.rounding.RoundingPool)."""
    for name, st, cases in pool.failing():
        report.add(Finding("rounding", f"{name}: every element within its ULP budget and every case within its own "
                           f"allowance, but over all {cases} cases of this dtype {st.describe()} (docs/tolerances.md, "
                           f"'Rounding statistics'). Fix: {ROUNDING_FIX}", score=st.score, kernel=spec.name,
                           dtype=dt.tag, input="all cases", seed=opts.seed, repro=repro_line(spec, opts, dt.tag)))


def _hint(layout, shape) -> str:
    """What a finding on a case of ``layout`` adds to its message ('' for ordinary cases)."""
    if layout is None or layout.kind == _lay.CONTIGUOUS:
        return ""
    if layout.large:
        return f"\nlarge-index case: {_lay.wrap_words(shape[0], shape[1], layout.wrap)}"
    return f"\n{_HINTS[layout.kind]}"


def record_raised(spec, opts, report, e: KernelFault, ctx: dict, hint: str = "") -> None:
    """Record a kernel that raised ``e`` on an input its supports() accepts (``ctx``: the Finding fields of that
    input): a Python exception is a **refusal** (counted for the raised-on-every-input rule), a CUDA fault or a
    failure inside Triton a **crash**; a TypeError / NameError raises UserCodeError (verifier.declare.usercode).
    ``hint``: what the input's layout adds to the message."""
    if usercode.classify(spec, e) == "refusal":
        report.inputs["raised"] += 1
        report.inputs.setdefault("first", usercode.describe(e.original))
        report.add(Finding("refusal", usercode.refusal_message(e) + hint, **ctx))
        return
    f = crash_finding(spec, opts, e, **{k: v for k, v in ctx.items() if k not in ("kernel", "seed")})
    report.add(replace(f, message=f.message + hint) if hint else f)


def record_fault(spec, opts, report, e: KernelFault) -> None:
    """A KernelFault that escaped a step (determinism, Triton resources, a CUDA fault after which the context is
    unusable): its crash finding, once (a step that recorded it marked it ``reported``). The battery stops this
    kernel after it; the pytest plugin fails the test and, for a CUDA fault, isolates the process's later tests."""
    if not getattr(e, "reported", False):
        report.add(crash_finding(spec, opts, e))
        e.reported = True


def false_assumption_finding(spec, opts, tag: str, where: str, program: tuple) -> Finding:
    """The **crash** finding of a ``tl.assume`` whose condition was false in the interpreter (``where``: 'file:line:
    source', verifier.launch.interpreter.false_assumptions): once per dtype; the checks ran past it."""
    return Finding("crash", f"tl.assume's condition is false in program {program} at {where}: compiled Triton hands "
                   "it to the optimizer as a fact, so the kernel's behaviour there is undefined (a bound check or "
                   "branch the fact decides may be dropped); the interpreter went on past it to check the values. Fix: "
                   "assume only what holds in every program (pid >= 0, not pid > 0), or drop the assumption",
                   kernel=spec.name, dtype=tag, seed=opts.seed, repro=repro_line(spec, opts, tag))


def hang_finding(spec, opts, e, **ctx) -> Finding:
    """The **timeout** finding of a kernel call stopped at its checks' deadline (``e``: a
    verifier.launch.watchdog.KernelHang), in the words of a child killed at its timeout; ``ctx``: dtype, input."""
    where = ", ".join(f"{k} {v}" for k, v in ctx.items() if k in ("dtype", "input"))
    return Finding("timeout", f"the kernel's checks did not finish within {e.seconds:g} s and were stopped"
                   + (f" while checking {where}" if where else "")
                   + f" (a hung kernel? set {KERNEL_TIMEOUT_ENV} or --kernel-timeout to allow longer)",
                   kernel=spec.name, seed=opts.seed,
                   repro=repro_line(spec, opts, ctx.get("dtype", ""), ctx.get("input", "")), **ctx)


def _layout_hint(spec, name: str) -> str:
    """What a guard hit past an output suggests where it is not at a declared layout: a kernel writing it at a
    stride of its own (verifier.declare.out_layouts)."""
    from verifier.ops import get_op

    if name in getattr(spec, "output_layout", {}) or name in getattr(spec, "outputs_alias", {}) or \
            name in get_op(spec.op).inouts:  # lies where it is, or where its input does
        return ""
    return (f". A kernel writing {name!r} into a wider buffer at a stride of its own declares it: "
            f"output_layout={{{name!r}: RowStride(...)}} or ColumnMajor(...)")


def run_case(spec: KernelSpec, dt, case_name: str, inputs: dict, opts: Options,
             report: Optional[KernelReport] = None, *, run: Optional[Callable] = None,
             repro: Optional[str] = None, layout=None, pool: Optional[RoundingPool] = None) -> KernelReport:
    """One input through the value, invariant, nan-inf, unwritten and out-of-range-write checks (a refusal
    inside supports() is a **refusal** finding, an exception a **crash**). Findings go to ``report`` (a new
    one if None), returned; cells are not marked: a check passes over all of its inputs, not one. A case the
    Triton interpreter cannot run faithfully raises gate.NotRun (nothing is recorded: the caller says why).
    ``case_name`` names the input in findings; ``repro`` defaults to the repro line of that case; ``run``
    to the spec kind's runner; ``layout`` (verifier.inputs.layouts.Layout) how the harness lays the tensors out;
    ``pool`` (verifier.judge.rounding.RoundingPool) sums each output's rounding statistics over the cases.
    After a CUDA fault the crash is recorded and the KernelFault re-raised, marked ``reported``."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run, xs = run or runner_for(spec), inputs
    if repro is None:
        repro = repro_line(spec, opts, dt.tag, case_name)
    shape = tuple(xs["x"].shape)
    ctx = dict(kernel=spec.name, dtype=dt.tag, input=case_name, shape=shape, seed=opts.seed, repro=repro)
    hint = _hint(layout, shape)
    try:
        outcome, verdict, faithful = evaluate(spec, run, dt, opts, xs, case_name, layout)
    except Unsupported as e:
        report.add(Finding("refusal", f"refused a shape its supports() accepts: {e}", **ctx))
        return report
    except KernelFault as e:
        record_raised(spec, opts, report, e, ctx, hint)
        if e.cuda:
            e.reported = True
            raise
        return report
    report.judged[dt.tag] = report.judged.get(dt.tag, 0) + 1
    report.inputs["ran"] += 1
    for t in verdict.comparison.tensors if pool is not None and faithful else ():
        if t.values_ok:  # over budget: the value check's
            pool.add(t.name, t.rounding, t.rounding_ok)
    found = []
    for name, mask in outcome.unwritten.items():
        count, size, where = unwritten_summary(mask)
        found.append(Finding("unwritten", f"output {name!r}: {count} of {size} elements left unwritten "
                             f"(still poisoned), {where}", score=1e9 + count, **ctx))
    for name, mask in outcome.unchanged.items():  # written over an input: poison cannot see what was left
        src, t = spec.outputs_alias[name], verdict.comparison[name]
        ref = verdict.reference.rounded.get(name)
        if ref is None or t.ok:
            continue  # keeping the input's bits where that is an acceptable result is not a defect
        left = mask & ~same_bits(np.asarray(ref), xs[src])
        if left.any():
            idx = np.argwhere(left)
            found.append(Finding("unwritten", f"output {name!r} (written over input {src!r}): {len(idx)} of "
                                 f"{left.size} elements still hold the input where the result differs, first at index "
                                 f"{tuple(int(i) for i in idx[0])}; the output is over its budget",
                                 score=1e9 + len(idx), **ctx))
    for name, hits in outcome.guard_hits.items():
        desc = ", ".join(f"{d} bytes {side} the end" if side == "after" else f"{d} bytes before the start"
                         for side, d in hits[:4])
        found.append(Finding("out-of-range-write", f"output {name!r}: guard bytes changed ({desc})"
                             + _layout_hint(spec, name), score=2e9, **ctx))
    for name, what in outcome.clobbered.items():  # compared bit for bit before and after (verifier.launch.harness)
        found.append(Finding("input-clobbered", f"input {name!r} changed during the call: {what}. Fix: leave inputs "
                             f"as they were, or declare it: outputs_alias={{OUTPUT: {name!r}}} for an output written "
                             f"over it, scratch_inputs=({name!r},) for an input the kernel may use as scratch",
                             score=1.5e9, **ctx))
    for name, (count, (side, distance)) in outcome.guard_reads.items():  # the interpreter's loads
        where = f"{distance} bytes before its first element" if side == "before" else \
            f"{distance} bytes past its last element"
        found.append(Finding("out-of-range-read", f"tensor {name!r}: {count} element reads outside it, the first "
                             f"{where} (the Triton interpreter's loads, in the guard bands the harness lays around "
                             "each tensor; a GPU reads whatever lies there, or faults at a page's end). Fix: mask the "
                             "load with the tensor's bounds, or clamp the index before it", score=1.8e9, **ctx))
    for name, (count, where) in outcome.gap_hits.items():  # where: the gaps (strided case) or declared padding
        found.append(Finding("out-of-range-write", f"output {name!r}: {count} elements written {where}", score=2e9,
                             **ctx))
    found += verdict.comparison.findings(**ctx) + violations_to_findings(verdict.violations, **ctx)
    found += [Finding("value", note, severity="warning", score=0.5, **ctx) for note in verdict.undeclared]
    for note in verdict.unjudged:  # ran and judged otherwise (writes, invariants, NaN): its values said nothing
        report.notes.append(case_not_run(f"[{dt.tag}] case {case_name}: value not judged: {note}"))
        report.vacuous[dt.tag] = report.vacuous.get(dt.tag, 0) + 1
    for f in found:  # a layout's hint explains wrong values or writes, not how a kernel rounds
        report.add(replace(f, message=f.message + hint) if hint and f.check != "rounding" else f)
    return report


