"""The determinism step: repeated runs on one input must be bitwise equal if the spec declares the kernel
deterministic, else each within tolerance."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from verifier.judge import tolerance as _tol
from verifier.results.levels import BUDGETS
from verifier.inputs.cases import random_inputs
from verifier.judge.compare import compare
from verifier.errors import Unsupported
from verifier.results.findings import Finding
from verifier.launch.harness import KernelFault, execute
from verifier.results.kernel import PASS, KernelReport, skipped
from verifier.results.options import Options, derived_seed, repro_line
from verifier.launch import runner_for
from verifier.battery.values import record_raised
from verifier.declare.kernels import KernelSpec


def check_determinism(spec: KernelSpec, dt, opts: Options, report: Optional[KernelReport] = None, *,
                      run: Optional[Callable] = None) -> KernelReport:
    """The determinism check of one dtype: repeated runs on one input must be bitwise equal if the spec
    declares the kernel deterministic, else each within tolerance. Findings and the cell go to ``report``
    (a new one if None), returned. ``run``: the launcher (default: the spec kind's runner). After a CUDA
    fault the crash is recorded and the KernelFault re-raised, marked ``reported``."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run = run or runner_for(spec)
    shape = next(((M, N) for M, N in ((64, 4096), (16, 1000), (8, 256), (4, 32))
                  if spec.check_supported(M, N, dt) is None), None)
    if shape is None:
        report.mark(dt.tag, "determinism", skipped("no probe shape supported"))
        return report
    M, N = shape
    rng = np.random.default_rng(derived_seed(opts.seed, spec.name, dt.tag, "determinism"))
    xs = random_inputs(spec, dt, M, N, rng)
    params = spec.op_params()
    ctx = dict(kernel=spec.name, dtype=dt.tag, input="determinism", shape=shape, seed=opts.seed,
               repro=repro_line(spec, opts, dt.tag, "determinism"))
    try:
        runs = [execute(run, spec, xs, dt, params, opts.device, check_poison=False).outputs
                for _ in range(max(BUDGETS[opts.budget]["repeats"], 2))]
    except Unsupported as e:
        report.add(Finding("refusal", f"refused a shape its supports() accepts: {e}", **ctx))
        return report
    except KernelFault as e:
        record_raised(spec, opts, report, e, ctx)
        report.mark(dt.tag, "determinism", skipped("the kernel raised on the probe shape"))
        if e.cuda:
            e.reported = True
            raise
        return report
    for name in runs[0]:
        first = runs[0][name]
        for i, later in enumerate(runs[1:], start=2):
            other = later[name]
            if np.array_equal(first.reshape(-1).view(np.uint8), other.reshape(-1).view(np.uint8)):
                continue
            if spec.expectations.deterministic:
                diff = int((first.reshape(-1).view(np.uint8) != other.reshape(-1).view(np.uint8)).sum())
                report.add(Finding("determinism", f"output {name!r}: run {i} differs bitwise from run 1 in {diff} "
                                   "bytes, but the kernel is declared deterministic", **ctx))
                break
            # Declared nondeterministic: each run must still be within tolerance (checked by value runs).
            from references import reference  # mpmath: imported when a nondeterministic kernel needs it

            ref = reference(spec.op, xs, params, dt.output)
            budget = _tol.budget(spec.op, dt, spec.math_mode, xs, ref, params, overrides=spec.tolerance, online=spec.online)
            cmp = compare({name: other}, ref, {name: budget[name]}, dt.output)
            for f in cmp.findings(**ctx):
                report.add(Finding("determinism", f"run {i} (declared nondeterministic) out of tolerance: {f.message}", **ctx))
    report.mark(dt.tag, "determinism", PASS)
    return report


