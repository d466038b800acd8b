"""The refusal step: every probe shape outside supports() (and M = 0) must be refused with
verifier.errors.Unsupported before anything launches."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from verifier.declare.kernels import KernelSpec
from verifier.errors import Unsupported, UsageError, VerifierError
from verifier.inputs.cases import PROBE_N, random_inputs
from verifier.launch import runner_for
from verifier.launch.harness import KernelFault, execute
from verifier.ops import get_op
from verifier.results.findings import Finding
from verifier.results.kernel import PASS, KernelReport
from verifier.results.options import Options, derived_seed, repro_line


def check_refusal(spec: KernelSpec, dt, opts: Options, report: Optional[KernelReport] = None, *,
                  run: Optional[Callable] = None) -> KernelReport:
    """The refusal check of one dtype: every probe shape outside supports() (and M=0) must be refused with
    verifier.errors.Unsupported before anything launches. Findings and the cell go to ``report`` (a new one
    if None), returned. ``run``: the launcher (default: the spec kind's runner). After a CUDA fault the
    crash is recorded and the KernelFault re-raised, marked ``reported``."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run = run or runner_for(spec)
    op_params = spec.op_params()
    probes = [(0, 32)] + [(1, n) for n in PROBE_N]
    for M, N in probes:
        reason = spec.check_supported(M, N, dt)
        if reason is None or spec.op_refusal(N) is not None:
            continue  # supported shapes are exercised by the value checks; shapes outside the op are asked of none
        rng = np.random.default_rng(derived_seed(opts.seed, spec.name, dt.tag, "refusal", N))
        xs = random_inputs(spec, dt, max(M, 1), N, rng)
        if M == 0:  # every per-row tensor empty (x, and labels[M] or lse_a[M] too), weights as they are
            op = get_op(spec.op)
            xs = {k: (v[:0] if op.shape_of(k, 0, N, op_params)[:1] == (0,) else v) for k, v in xs.items()}
        ctx = dict(kernel=spec.name, dtype=dt.tag, input="refusal", shape=(M, N), seed=opts.seed,
                   repro=repro_line(spec, opts, dt.tag, "refusal"))
        try:
            execute(run, spec, xs, dt, op_params, opts.device, check_poison=False)
        except Unsupported:
            continue
        except (KernelFault, VerifierError) as e:
            if isinstance(e, UsageError):
                raise
            report.add(Finding("refusal", f"M={M}, N={N} is outside supports ({reason}) but the kernel raised "
                               f"{e} instead of a clear refusal (verifier.errors.Unsupported)", **ctx))
            if getattr(e, "cuda", False):
                e.reported = True
                raise
            continue
        report.add(Finding("refusal", f"M={M}, N={N} is outside supports ({reason}) but the kernel ran without "
                           "refusing", **ctx))
    report.mark(dt.tag, "refusal", PASS)
    return report


