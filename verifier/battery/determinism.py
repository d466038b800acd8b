"""The determinism step: repeated runs on one input must be bitwise equal if the spec declares the kernel
deterministic, else each within tolerance."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from verifier.battery import gate
from verifier.battery.values import record_raised
from verifier.declare.kernels import KernelSpec
from verifier.errors import Unsupported
from verifier.inputs.cases import random_inputs
from verifier.judge import Criteria, judge
from verifier.launch import runner_for
from verifier.launch.harness import KernelFault, execute
from verifier.launch.interpreter import recording
from verifier.results.findings import Finding
from verifier.results.kernel import PASS, KernelReport, skipped
from verifier.results.notes import case_not_run
from verifier.results.options import Options, derived_seed, repro_line


PROBE_SHAPES = ((64, 4096), (16, 1000), (8, 256), (4, 32))  # the first the kernel supports


def _probe_shapes(spec: KernelSpec, device: str) -> tuple:
    """On a GPU, 64 x 4096 first: blocks in flight at once are where arrival order (atomics, split reductions)
    varies. The Triton interpreter (a Triton kernel on the CPU) runs one program after another in numpy, so its
    repeats can differ only through memory the kernel reads without writing it, which 16 x 1000 (a masked tail
    tile too) shows as well, at a fraction of 64 x 4096's interpreted ops (0.4-0.9 s a dtype in suites/test_ops.py).
    A callable on the CPU keeps 64 x 4096: torch parallelises reductions over 32K elements."""
    return PROBE_SHAPES[1:] if spec.interpreted(device) else PROBE_SHAPES


def _fitting_probe(spec: KernelSpec, dt) -> Optional[tuple]:
    """16 x the first N from 1000 up (then down from 999) the kernel supports: an op whose rows must be a multiple
    of a param (group_norm's channels: 48, or 320 as Stable Diffusion's) supports none of the fixed probe shapes,
    and its determinism would go unchecked."""
    for N in (*range(1000, 5097), *range(999, 0, -1)):
        if spec.check_supported(16, N, dt) is None:
            return 16, N
    return None


def check_determinism(spec: KernelSpec, dt, opts: Options, report: Optional[KernelReport] = None, *,
                      run: Optional[Callable] = None) -> KernelReport:
    """The determinism check of one dtype: repeated runs on one input must be bitwise equal if the spec
    declares the kernel deterministic, else each within tolerance. Findings and the cell go to ``report``
    (a new one if None), returned. ``run``: the launcher (default: the spec kind's runner). After a CUDA
    fault the crash is recorded and the KernelFault re-raised, marked ``reported``."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run = run or runner_for(spec)
    shape = next(((M, N) for M, N in _probe_shapes(spec, opts.device) if spec.check_supported(M, N, dt) is None), None)
    shape = shape or _fitting_probe(spec, dt)
    if shape is None:
        report.mark(dt.tag, "determinism", skipped("no probe shape supported"))
        return report
    M, N = shape
    gap = gate.interpreter_source_gap(spec, opts.device)
    if gap:  # what the interpreter would run is not the kernel (and may fault past its masks)
        report.notes.append(case_not_run(f"[{dt.tag}] case determinism not run: {gap}"))
        report.mark(dt.tag, "determinism", skipped(gap))
        return report
    rng = np.random.default_rng(derived_seed(opts.seed, spec.name, dt.tag, "determinism"))
    xs = random_inputs(spec, dt, M, N, rng)
    params = spec.op_params()
    ctx = dict(kernel=spec.name, dtype=dt.tag, input="determinism", shape=shape, seed=opts.seed,
               repro=repro_line(spec, opts, dt.tag, "determinism"))
    try:
        with recording() as bf16_ops:
            runs = [execute(run, spec, xs, dt, params, opts.device, check_poison=False).outputs
                    for _ in range(opts.run_level.repeats)]
    except Unsupported as e:
        report.add(Finding("refusal", f"refused a shape its supports() accepts: {e}", **ctx))
        return report
    except KernelFault as e:
        closed = gate.after_run(spec, dt, "determinism", opts.device, fault=e)
        if closed is not None:  # only the interpreter fails this way: a caveat, not a finding
            report.notes.append(case_not_run(f"[{dt.tag}] {closed.text}"))
            report.mark(dt.tag, "determinism", skipped(closed.reason))
            return report
        record_raised(spec, opts, report, e, ctx)
        report.mark(dt.tag, "determinism", skipped("the kernel raised on the probe shape"))
        if e.cuda:
            e.reported = True
            raise
        return report
    closed = gate.after_run(spec, dt, "determinism", opts.device, bf16_ops=bf16_ops)
    if closed is not None and not spec.expectations.deterministic:  # bitwise repeats hold even so; values do not
        report.notes.append(case_not_run(f"[{dt.tag}] {closed.text}"))
        report.mark(dt.tag, "determinism", skipped(closed.reason))
        return report

    def bits(a):
        return a.reshape(-1).view(np.uint8)

    if spec.expectations.deterministic:
        for name in runs[0]:
            for i, later in enumerate(runs[1:], start=2):
                if not np.array_equal(bits(runs[0][name]), bits(later[name])):
                    diff = int((bits(runs[0][name]) != bits(later[name])).sum())
                    report.add(Finding("determinism", f"output {name!r}: run {i} differs bitwise from run 1 in {diff} "
                                       "bytes, but the kernel is declared deterministic", **ctx))
                    break
    else:  # declared nondeterministic: each run must still be within tolerance (the one judge, compare only)
        criteria, ref = Criteria.of(spec, dt), None
        for i, later in enumerate(runs[1:], start=2):
            if all(np.array_equal(bits(runs[0][n]), bits(later[n])) for n in runs[0]):
                continue
            verdict = judge(criteria, xs, later, invariants=False, ref=ref)
            ref = verdict.reference
            for f in verdict.comparison.findings(**ctx):
                report.add(Finding("determinism", f"run {i} (declared nondeterministic) out of tolerance: "
                                   f"{f.message}", **ctx))
    report.mark(dt.tag, "determinism", PASS)
    return report


