"""The check battery: the one place that decides whether a kernel is right, by running its steps in order.

For each kernel (a kernel's battery stops only where continuing is meaningless: a build failure, or a CUDA
fault that leaves the context unusable):
build → resources → static (verifier.lint, CUDA sources) → refusal → value / invariant / nan-inf / unwritten /
out-of-range-write (every catalogue case and Hypothesis-drawn shapes) → determinism → sanitizer
(verifier.sanitizer, when present). The steps live in verifier.steps, the inputs in verifier.cases, the
result model in verifier.kernel_report, the options in verifier.options.

Every input is a fresh random draw from a seed derived from (base seed, kernel, dtype, case); a finding
records the base seed and case name, and its repro line re-runs exactly that case: ``--case NAME`` takes a
catalogue case, ``hypothesis:MxN:rngS`` (a Hypothesis-drawn shape and its value seed), ``refusal`` or
``determinism``.

A Python exception raised by the kernel (callable, launcher) on a shape supports() accepts is a **refusal**
finding for that input (with the fix: declare it in supports()) and the battery goes on; raised on every
input, or a TypeError / NameError, it is the kernel's error; a CUDA fault is a **crash** (verifier.usercode).
An exception in the spec's own supports / launches / defines is that kernel's error (verdict 'error', exit 1),
and the run goes on with the other kernels; a UsageError (a malformed spec or option) propagates: exit 2.
Undeclared resource use (spills, stack) is a **resources** warning; declared contracts
(verifier.contracts) leave out inputs and let flushed subnormals pass.

``check_all`` runs each kernel in this process, in a fork (verifier.forked, CPU) or in a child process
(verifier.isolate, GPU).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np

from verifier import contracts as _contracts
from verifier import forked as _forked
from verifier import usercode
from verifier.budgets import BUDGETS
from verifier.cases import cases_for, hypothesis_case, selected_cases
from verifier.errors import UsageError, VerifierError
from verifier.harness import KernelFault
from verifier.isolate import check_in_child
from verifier.kernel_report import PASS, RUN_CHECKS, KernelReport, crash_finding, skipped
from verifier.lint.driver import battery_hook as static_hook
from verifier.notes import case_not_run
from verifier.options import PSEUDO_CASES, Options, derived_seed
from verifier.runners import runnable_reason, runner_for
from verifier.runners.triton import activate
from verifier.sanitizer.driver import battery_hook as sanitizer_hook
from verifier.spec import KernelSpec
from verifier.steps.build import build_and_resources, triton_resources
from verifier.steps.determinism import check_determinism
from verifier.steps.hypothesis import check_shapes
from verifier.steps.refusal import check_refusal
from verifier.steps.values import interpreter_caveat, run_case
from verifier.usercode import UserCodeError


def _wants(opts: Options, step: str) -> bool:
    """Whether this run includes ``step`` ('refusal', 'values', 'determinism'): all of them, unless
    ``--case`` narrows the run to one input (values) or one pseudo-case."""
    if opts.case is None:
        return True
    if opts.case in PSEUDO_CASES:
        return step == opts.case
    return step == "values"


def check_kernel(spec: KernelSpec, opts: Options, progress: Optional[Callable[[str], None]] = None) -> KernelReport:
    """The battery for one kernel. Progress messages are ``NAME [TAG]: STEP`` (STEP a check or a case name)."""
    report = KernelReport(spec=spec, device=opts.device)
    t0 = time.monotonic()
    tags = [d for d in spec.dtypes if opts.dtype in (None, d.tag)]
    if not tags:
        raise UsageError(
            f"kernel {spec.name} declares no dtype {opts.dtype!r}",
            fix=f"declared: {', '.join(d.tag for d in spec.dtypes)}",
        )
    say = progress or (lambda s: None)
    report.notes += _contracts.declared_notes(spec)
    try:
        say(f"{spec.name}: build")
        if not build_and_resources(spec, opts, report, tags):
            return report
        if spec.kind == "cuda" and opts.case is None:  # static checks on the PTX (verifier.lint); no GPU needed
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
            return report
        if spec.kind == "triton" and opts.device == "cuda":
            say(f"{spec.name}: resources")
            triton_resources(spec, opts, report, tags)
        run = runner_for(spec)
        for dt in tags:
            if _wants(opts, "refusal"):
                say(f"{spec.name} [{dt.tag}]: refusal")
                check_refusal(spec, dt, opts, report, run=run)
            if _wants(opts, "values"):
                say(f"{spec.name} [{dt.tag}]: values")
                _check_values(spec, run, dt, opts, report, say)
            if _wants(opts, "determinism"):
                say(f"{spec.name} [{dt.tag}]: determinism")
                check_determinism(spec, dt, opts, report, run=run)
        if opts.sanitize:
            sanitizer_hook(spec, opts, report, tags)
        everywhere = usercode.raised_everywhere(spec, report.inputs) if opts.case is None else None
        if everywhere is not None:
            usercode.blame_everywhere(report, everywhere, RUN_CHECKS)
    except UserCodeError as e:  # the spec's own code raised: this kernel's error, the run goes on
        usercode.blame(report, e)
    except UsageError:
        raise  # a malformed spec (or option) found while running it: exit 2, fix the spec
    except KernelFault as e:
        # Raised outside a per-input check (determinism, Triton resources), or a CUDA fault after which
        # the context is unusable: record it (once) and stop this kernel's battery.
        if not getattr(e, "reported", False):
            report.add(crash_finding(spec, opts, e))
    except VerifierError as e:
        report.error = f"{type(e).__name__}: {e}"
    finally:
        report.seconds = time.monotonic() - t0
    return report


def _check_values(spec, run, dt, opts, report, say):
    cases = selected_cases(spec, dt, opts)
    ran, left_out, judged_before = 0, None, report.judged.get(dt.tag, 0)
    for case in cases:
        say(f"{spec.name} [{dt.tag}]: {case.name}")
        reason = spec.check_supported(case.M, case.N, dt)
        if reason is not None:
            report.notes.append(case_not_run(f"[{dt.tag}] case {case.name} ({case.M}x{case.N}) refused by design: {reason}"))
            continue
        rng = np.random.default_rng(derived_seed(opts.seed, spec.name, dt.tag, case.name))
        xs = case.make(rng, dt, spec.op, spec.op_params())
        caveat = interpreter_caveat(spec, dt, xs, opts.device)
        if caveat:
            report.notes.append(case_not_run(f"[{dt.tag}] case {case.name} not run: {caveat}"))
            continue
        contract = _contracts.excluded(spec, xs)
        if contract:
            report.notes.append(case_not_run(f"[{dt.tag}] case {case.name} {contract}"))
            left_out = contract
            continue
        run_case(spec, dt, case.name, xs, opts, report, run=run)
        ran += 1
    if opts.case is None and BUDGETS[opts.budget]["hypothesis"]:
        ran += check_shapes(spec, dt, opts, report, run=run)
    checks = ("value", "invariant", "nan-inf", "unwritten", "out-of-range-write")
    # A check passes only if some input ran through it: a kernel that raised on every input checked nothing.
    judged = report.judged.get(dt.tag, 0) - judged_before
    why = (left_out or "every case refused by supports") if not ran else \
        "no input ran through this check: the kernel raised on every input it was given (see its crash findings)"
    for check in checks:
        report.mark(dt.tag, check, PASS if judged else skipped(why))


def _not_selected(spec, opts) -> Optional[str]:
    """Why --dtype / --case leave nothing of this kernel to check (None: something is left)."""
    if opts.dtype is not None and all(d.tag != opts.dtype for d in spec.dtypes):
        return f"declares no dtype {opts.dtype}"
    if opts.case is None or opts.case in PSEUDO_CASES or hypothesis_case(opts.case) is not None:
        return None
    if not any(c.name == opts.case for dt in spec.dtypes for b in BUDGETS for c in cases_for(spec, dt, b)):
        return f"op {spec.op} has no case {opts.case}"
    return None


def _selection(spec, opts) -> Optional[str]:
    """_not_selected, with a spec whose supports() raises counted as selected: its battery reports the error."""
    try:
        return _not_selected(spec, opts)
    except UserCodeError:
        return None


def _use_child(spec, opts, isolate: Optional[bool]) -> bool:
    if isolate is not None:
        return isolate
    # Automatic: on a GPU, everything that may launch device code; CPU-only callables stay in-process.
    return opts.device == "cuda" and not (spec.kind == "callable" and spec.device == "cpu")


def check_all(specs, opts: Options, progress=None, isolate: Optional[bool] = None) -> list[KernelReport]:
    """Run the battery on every kernel and go on after each, whatever it did.

    ``isolate``: run each kernel in a child process (verifier.isolate), so a fault is a **crash** finding
    and a hang a **timeout** finding (after ``opts.timeout`` s); None means: on a GPU, yes; on the CPU,
    callables and Triton kernels are checked in a fork of this process (verifier.forked: a kernel that kills
    its process is a crash finding); False: everything in this process.
    --dtype / --case select what exists: kernels without it are reported skipped; if no kernel has it,
    that is a usage error."""
    unselected = {s.name: _selection(s, opts) for s in specs}
    if specs and all(unselected.values()):
        what = f"dtype {opts.dtype}" if opts.dtype and all("dtype" in r for r in unselected.values()) \
            else f"case {opts.case}"
        raise UsageError(f"no selected kernel has {what}",
                         fix="take --dtype / --case from a finding's repro line, or see `verifier list` / "
                             "`verifier cases OP`")
    in_process = [s for s in specs if not unselected[s.name] and not _use_child(s, opts, isolate)]
    triton = next((s for s in in_process if s.kind == "triton"), None)
    if triton is not None and runnable_reason(triton, opts.device) is None:
        activate(opts.triton_mode or ("compiled" if opts.device == "cuda" else "interpreter"))
    reports = []
    for i, spec in enumerate(specs):
        if progress:
            progress(f"[{i + 1}/{len(specs)}] {spec.name}")
        if unselected[spec.name]:
            r = KernelReport(spec=spec, device=opts.device)
            for check in ("build", "resources") + RUN_CHECKS:
                r.mark("*", check, skipped(f"not selected: {unselected[spec.name]}"))
            reports.append(r)
        elif _use_child(spec, opts, isolate):
            reports.append(check_in_child(spec, opts, progress))
        elif isolate is None and spec.kind in ("callable", "triton") and _forked.available(opts.device):
            # A kernel that kills its process (segfault, os._exit) costs only its own report.
            reports.append(_forked.check_forked(spec, opts, check_kernel, progress))
        else:
            reports.append(check_kernel(spec, opts, progress))
    return reports


__all__ = ["check_kernel", "check_all"]
