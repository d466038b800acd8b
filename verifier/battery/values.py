"""The values step: one input through the value (ULPs against the certified reference, within the
per-element budget), invariant, nan-inf, unwritten (poisoned outputs) and out-of-range-write (guard bands)
checks. A refusal inside supports() is a **refusal** finding, a Python exception on some shapes a refusal,
a CUDA fault a **crash** (verifier.declare.usercode decides)."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from verifier.declare import contracts as _contracts
from verifier.judge import invariants as _inv
from verifier.judge import tolerance as _tol
from verifier.declare import usercode
from verifier.judge.compare import compare
from verifier.errors import Unsupported
from verifier.results.findings import Finding
from verifier.judge.flushed import judge_flushed
from verifier.launch.harness import KernelFault, execute
from verifier.judge.invariants import violations_to_findings
from verifier.results.kernel import KernelReport, crash_finding
from verifier.results.options import Options, repro_line
from verifier.launch import runner_for
from verifier.declare.kernels import KernelSpec


def interpreter_caveat(spec, dt, xs, device) -> Optional[str]:
    """Inputs the Triton interpreter cannot represent faithfully (so a mismatch would be the
    interpreter's, not the kernel's). tests/test_interpreter_caveats.py pins each fact, so a Triton
    release that fixes it fails that test and the caveat can go."""
    if spec.kind != "triton" or device != "cpu" or dt.input != "bfloat16":
        return None
    import ml_dtypes

    tiny = float(ml_dtypes.finfo(ml_dtypes.bfloat16).smallest_normal)
    for name, v in xs.items():
        a = np.abs(v.astype(np.float64))
        if np.any((a > 0) & (a < tiny)):
            return (f"input {name!r} holds bf16 subnormals, which the Triton interpreter decodes wrongly "
                    "(6.5e-39 loads as 1.3e-39); run compiled on a GPU to check them")
    return None


def evaluate(spec, run, dt, opts, xs) -> tuple:
    """Run once and judge: returns (outcome, comparison, violations)."""
    from references import reference  # mpmath: imported on the first judged input, not with the module

    params = spec.op_params()
    outcome = execute(run, spec, xs, dt, params, opts.device)
    ref = reference(spec.op, xs, params, dt.output)
    budget = _tol.budget(spec.op, dt, spec.math_mode, xs, ref, params, overrides=spec.tolerance, online=spec.online)
    comparison = compare(outcome.outputs, ref, budget, dt.output)
    violations = _inv.check(spec.op, xs, outcome.outputs, dt, params, math_mode=spec.math_mode,
                            online=spec.online)
    if (not comparison.ok or violations) and _contracts.flushes(spec):
        # Declared (or inferred) subnormals='flush': the output may be that of flushed inputs and outputs.
        flushed = judge_flushed(spec, dt, xs, outcome.outputs, params)
        if flushed is not None and flushed[0].ok and not flushed[1]:
            comparison, violations = flushed
    return outcome, comparison, violations


def record_raised(spec, opts, report, e: KernelFault, ctx: dict) -> None:
    """Record a kernel that raised ``e`` on an input its supports() accepts (``ctx``: the Finding fields of that
    input): a Python exception is a **refusal** (counted for the raised-on-every-input rule), a CUDA fault or a
    failure inside Triton a **crash**; a TypeError / NameError raises UserCodeError (verifier.declare.usercode)."""
    if usercode.classify(spec, e) == "refusal":
        report.inputs["raised"] += 1
        report.inputs.setdefault("first", usercode.describe(e.original))
        report.add(Finding("refusal", usercode.refusal_message(e), **ctx))
        return
    report.add(crash_finding(spec, opts, e, **{k: v for k, v in ctx.items() if k not in ("kernel", "seed")}))


def run_case(spec: KernelSpec, dt, case_name: str, inputs: dict, opts: Options,
             report: Optional[KernelReport] = None, *, run: Optional[Callable] = None,
             repro: Optional[str] = None) -> KernelReport:
    """One input through the value, invariant, nan-inf, unwritten and out-of-range-write checks (a refusal
    inside supports() is a **refusal** finding, an exception a **crash**). Findings go to ``report`` (a new
    one if None), returned; cells are not marked: a check passes over all of its inputs, not one.
    ``case_name`` names the input in findings; ``repro`` defaults to the repro line of that case; ``run``
    to the spec kind's runner. After a CUDA fault the crash is recorded and the KernelFault re-raised,
    marked ``reported``."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run, xs = run or runner_for(spec), inputs
    if repro is None:
        repro = repro_line(spec, opts, dt.tag, case_name)
    shape = tuple(xs["x"].shape)
    ctx = dict(kernel=spec.name, dtype=dt.tag, input=case_name, shape=shape, seed=opts.seed, repro=repro)
    try:
        outcome, comparison, violations = evaluate(spec, run, dt, opts, xs)
    except Unsupported as e:
        report.add(Finding("refusal", f"refused a shape its supports() accepts: {e}", **ctx))
        return report
    except KernelFault as e:
        record_raised(spec, opts, report, e, ctx)
        if e.cuda:
            e.reported = True
            raise
        return report
    report.judged[dt.tag] = report.judged.get(dt.tag, 0) + 1
    report.inputs["ran"] += 1
    for name, mask in outcome.unwritten.items():
        idx = np.argwhere(mask)
        report.add(Finding("unwritten", f"output {name!r}: {len(idx)} of {mask.size} elements left unwritten "
                           f"(still poisoned), first at index {tuple(int(i) for i in idx[0])}", score=1e9 + len(idx), **ctx))
    for name, hits in outcome.guard_hits.items():
        desc = ", ".join(f"{d} bytes {side} the end" if side == "after" else f"{d} bytes before the start"
                         for side, d in hits[:4])
        report.add(Finding("out-of-range-write", f"output {name!r}: guard bytes changed ({desc})", score=2e9, **ctx))
    for f in comparison.findings(**ctx):
        report.add(f)
    for f in violations_to_findings(violations, **ctx):
        report.add(f)
    return report


