"""The check battery: the one place that decides whether a kernel is right, by running its steps in order.

For each kernel (a kernel's battery stops only where continuing is meaningless: a build failure, or a CUDA
fault that leaves the context unusable):
build → resources → static (verifier.lint, CUDA sources) → refusal → value / rounding / invariant / nan-inf /
unwritten / out-of-range-write / input-clobbered (every catalogue case and Hypothesis-drawn shapes) → determinism →
sanitizer
(verifier.sanitizer, when present). The steps live in verifier.battery, the inputs in verifier.inputs.cases, the
result model in verifier.results.kernel, the options in verifier.results.options.

Every input is a fresh random draw from a seed derived from (base seed, kernel, dtype, case); a finding
records the base seed and case name, and its repro line re-runs exactly that case: ``--case NAME`` takes a
catalogue case, ``hypothesis:MxN:rngS`` (a Hypothesis-drawn shape and its value seed), ``refusal`` or
``determinism``.

A Python exception raised by the kernel (callable, launcher) on a shape supports() accepts is a **refusal**
finding for that input (with the fix: declare it in supports()) and the battery goes on; raised on every
input, or a TypeError / NameError, it is the kernel's error; a CUDA fault is a **crash** (verifier.declare.usercode).
An exception in the spec's own supports / launches / defines, or a spec found malformed while it runs (a
SpecError: a launcher that launched nothing, an entry the cubin lacks), is that kernel's error (verdict 'error',
exit 1), and the run goes on with the other kernels; any other UsageError (a bad option) propagates: exit 2.
Undeclared resource use (spills, stack) is a **resources** warning; declared contracts
(verifier.declare.contracts) leave out inputs and let flushed subnormals pass.

``check_all`` runs each kernel in this process, in a fork (verifier.isolation.forked, CPU) or in a child process
(verifier.isolation.children, GPU).
"""
from __future__ import annotations

import dataclasses
import re
import time
from typing import Callable, Optional

from verifier.battery import gate
from verifier.battery.build import build_and_resources, triton_resources
from verifier.battery.determinism import check_determinism
from verifier.battery.hypothesis import check_shapes
from verifier.battery.plan import CONFIG_STEP, config_variants, each_config, guarded, pinned, wants
from verifier.battery.refusal import check_refusal
from verifier.battery.unfinished import mark_unfinished
from verifier.battery.values import false_assumption_finding, hang_finding, pooled_rounding, run_case
from verifier.judge.rounding import RoundingPool
from verifier.declare import contracts as _contracts
from verifier.declare import usercode
from verifier.declare.kernels import KernelSpec
from verifier.errors import UsageError
from verifier.inputs.cases import DrawTooLarge, draw, large_left_out, selected_cases
from verifier.launch import runnable_reason, runner_for
from verifier.launch.interpreter import false_assumptions
from verifier.lint.step import battery_hook as static_hook
from verifier.ops import get_op
from verifier.results.kernel import PASS, RUN_CHECKS, KernelReport, skipped
from verifier.results.levels import TABLE as LEVELS
from verifier.results.notes import case_not_run
from verifier.results.options import Options
from verifier.sanitizer.runs import battery_hook as sanitizer_hook


def check_kernel(spec: KernelSpec, opts: Options, progress: Optional[Callable[[str], None]] = None,
                 report: Optional[KernelReport] = None) -> KernelReport:
    """The battery for one kernel. Progress messages are ``NAME [TAG]: STEP`` (STEP a check or a case name), each
    said before its step runs. ``report``: an empty report to fill (an isolation child keeps what it holds at each
    step on disk, verifier.isolation.journal: a child that dies keeps what it completed)."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    t0 = time.monotonic()
    tags = [d for d in spec.dtypes if opts.dtype in (None, d.tag)]
    if not tags:
        raise UsageError(
            f"kernel {spec.name} declares no dtype {opts.dtype!r}",
            fix=f"declared: {', '.join(d.tag for d in spec.dtypes)}",
        )
    said = [""]  # the steps announced, the last one the step a hang interrupts, for its finding

    def say(msg: str):
        said.append(msg)
        if progress:
            progress(msg)

    report.notes += _contracts.declared_notes(spec)
    try:  # the plan's ladder (verifier.battery.plan): the kernel's error, crash or timeout; the run goes on
        error = guarded(spec, opts, report, lambda: _battery(spec, opts, report, tags, say),
                        on_hang=lambda e: _timed_out(spec, opts, report, tags, e, said))
        if error is not None:
            usercode.blame(report, error)
    finally:
        report.seconds = time.monotonic() - t0
        # once each: an autotuned kernel's battery runs per config, and a case left out is left out in every one
        # (a library kernel with 12 configs listed each large case 12 times, and counted it 12 times)
        report.notes[:] = dict.fromkeys(report.notes)
    return report


def _battery(spec, opts, report, tags, say) -> None:
    """The steps, in order (check_kernel records what ends them early)."""
    say(f"{spec.name}: build")
    if not build_and_resources(spec, opts, report, tags):
        if spec.unavailable():  # a package it needs is missing: every cell says so, nothing runs
            report.skip_all([dt.tag for dt in tags], RUN_CHECKS, spec.unavailable())
            report.notes.append(f"not checked: {spec.unavailable()}")
        return
    if spec.builds_source and opts.case is None:  # static checks on the PTX (verifier.lint); no GPU needed
        say(f"{spec.name}: static")
        static_hook(spec, opts, report, tags)
    why = runnable_reason(spec, opts.device)
    if why:
        for dt in tags:
            for check in RUN_CHECKS:
                report.mark(dt.tag, check, skipped(why))
        report.notes.append(f"not run: {why}")
        if opts.sanitize:  # marks skipped(<reason>) cells; never launches anything on CPU
            sanitizer_hook(spec, opts, report, tags)
        return
    if spec.uses_triton and opts.device == "cuda":
        say(f"{spec.name}: resources")
        triton_resources(spec, opts, report, tags)
    run = runner_for(spec)
    configs = config_variants(spec)
    first = configs[0][0]  # refusal and determinism: an autotuned kernel's first config (no benchmarking)
    for dt in tags:
        with false_assumptions() as assumed:  # the interpreter's false tl.assume: reported, the checks go on
            if wants(opts, "refusal"):
                say(f"{spec.name} [{dt.tag}]: refusal")
                with pinned(spec, first):
                    check_refusal(spec, dt, opts, report, run=run)
            if wants(opts, "values"):
                say(f"{spec.name} [{dt.tag}]: values")
                each_config(spec, report, lambda: _check_values(spec, run, dt, opts, report, say),  # autotuned:
                            say=lambda step: say(f"{spec.name} [{dt.tag}]: {step}"))  # each config it may pick
            if wants(opts, "determinism"):
                say(f"{spec.name} [{dt.tag}]: determinism")
                with pinned(spec, first):
                    check_determinism(spec, dt, opts, report, run=run)
        for where, program in assumed.items():
            report.add(false_assumption_finding(spec, opts, dt.tag, where, program))
    if opts.sanitize:
        sanitizer_hook(spec, opts, report, tags)
    everywhere = usercode.raised_everywhere(spec, report.inputs) if opts.case is None else None
    if everywhere is not None:
        usercode.blame_everywhere(report, everywhere, RUN_CHECKS)


_STEP = re.compile(r"^\S+ \[(?P<tag>[^\]]+)\]: (?P<step>.+)$")  # a progress line of a dtype's step


def _timed_out(spec, opts, report, tags, e, said: list) -> None:
    """A kernel call stopped at the deadline: its timeout finding, naming the step it was in and what never ran
    (as a child killed at its timeout says it, verifier.battery.unfinished); the checks not done are skipped."""
    m = _STEP.match(said[-1])
    ctx = {"dtype": m["tag"]} if m else {}
    if m and m["step"] != "values" and not m["step"].startswith(CONFIG_STEP):
        ctx["input"] = m["step"]  # a catalogue case, hypothesis:MxN:rngS, refusal or determinism: --case values
    steps = [(s["tag"], s["step"]) for s in map(_STEP.match, said) if s]
    finding = hang_finding(spec, opts, e, **ctx)
    left = mark_unfinished(report, spec, opts, steps, "timed out")
    report.add(dataclasses.replace(finding, message=finding.message + left))
    report.skip_all([dt.tag for dt in tags], RUN_CHECKS, "no result: the kernel's checks timed out")


def _check_values(spec, run, dt, opts, report, say):
    cases = selected_cases(spec, dt, opts)
    if opts.case is None and LEVELS[opts.level].large_index and large_left_out(spec) is not None:
        report.notes.append(case_not_run(f"[{dt.tag}] {large_left_out(spec)}"))  # never a silent omission
    ran, left_out, caveat, judged_before = 0, None, None, report.judged.get(dt.tag, 0)
    vacuous_before = report.vacuous.get(dt.tag, 0)
    pool = RoundingPool()  # each output's rounding statistics over the catalogue cases (a case of 4 rows says little)
    for case in cases:
        say(f"{spec.name} [{dt.tag}]: {case.name}")
        closed = gate.before_inputs(spec, dt, case.name, case.M, case.N, case.layout, opts.device,
                                    None if opts.case else opts.level)
        try:
            xs = draw(spec, dt, case, opts.seed) if closed is None else None
        except DrawTooLarge as e:  # a large case whose inputs this host cannot hold
            closed, xs = gate.Closed(gate.DEVICE, e.reason, f"case {case.name} ({case.M}x{case.N}) not run: {e.reason}"), None
        closed = closed or gate.after_inputs(spec, dt, case.name, xs, opts.device)
        if closed is not None:
            report.notes.append(case_not_run(f"[{dt.tag}] {closed.text}"))
            left_out = closed.reason if closed.kind in (gate.CONTRACT, gate.DEVICE) else left_out
            caveat = closed.reason if closed.kind == gate.INTERPRETER else caveat
            continue
        try:
            run_case(spec, dt, case.name, xs, opts, report, run=run, layout=case.layout, pool=pool)
        except gate.NotRun as e:  # ran, but only the interpreter fails this way: a caveat, not a finding
            report.notes.append(case_not_run(f"[{dt.tag}] {e.closed.text}"))
            caveat = e.closed.reason
            continue
        ran += 1
    pooled_rounding(spec, dt, opts, report, pool)
    if wants(opts, "shapes"):
        ran += check_shapes(spec, dt, opts, report, run=run, say=lambda step: say(f"{spec.name} [{dt.tag}]: {step}"))
    checks = ("value", "rounding", "invariant", "nan-inf", "unwritten", "out-of-range-write", "input-clobbered")
    # A check passes only if some input ran through it: a kernel that raised on every input checked nothing.
    judged = report.judged.get(dt.tag, 0) - judged_before
    vacuous = report.vacuous.get(dt.tag, 0) - vacuous_before  # judged, but no value bound said anything
    # An interpreter gap closes the ordinary cases; a contract or the device only some (strided, large, NaN): the
    # gap is why nothing was judged, though a large case left out for want of a GPU came after it.
    why = (caveat or left_out or "every case refused by supports") if not ran else \
        "no input ran through this check: the kernel raised on every input it was given (see its crash findings)"
    no_invariants = get_op(spec.op).invariants is None
    for check in checks:
        if check == "invariant" and judged and no_invariants:
            report.mark(dt.tag, check, skipped(f"op {spec.op} declares no invariants"))
            continue
        if check == "value" and judged and vacuous == judged:  # every input's value bounds held 0: not a pass
            report.mark(dt.tag, check, skipped("no value was judged: on every input the error bound held 0 (see the "
                                               "notes; a 16-bit accumulation over long rows, or a cancellation)"))
            continue
        report.mark(dt.tag, check, PASS if judged else skipped(why))


__all__ = ["check_kernel"]
