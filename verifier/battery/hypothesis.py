"""The Hypothesis step: shapes drawn from verifier.inputs.catalogue.shapes with random values, each through the values
step (verifier.battery.values.run_case); a failure is shrunk to the smallest failing shape.

One definition, for ``verifier check`` and the suites' ``test_<op>_shapes`` alike:
- examples per kernel and dtype: the run level's ``hypothesis`` column (verifier.results.levels; 0: the step does not run);
- an example **fails** when it has a finding of severity ``error``; the shrunk failing example's findings are
  reported. Warnings do not stop the search: those of the first example that has any are reported with a
  passing verdict (``--strict`` / ``--verifier-strict`` then fail on them, as on any warning);
- an example that failed and then passed on replay is a **determinism** finding (verifier.battery.flaky);
- after a CUDA fault the search stops at once (every later example would run in an unusable context): the
  crash is recorded and the KernelFault re-raised, marked ``reported``.
Each example is named ``hypothesis:MxN:rngS``; ``--case`` with that name re-runs it (verifier.inputs.cases).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from verifier.battery import gate
from verifier.battery.values import run_case
from verifier.declare.kernels import KernelSpec
from verifier.inputs import catalogue as _inputs
from verifier.inputs.cases import random_inputs
from verifier.launch import runner_for
from verifier.launch.harness import KernelFault
from verifier.results.kernel import KernelReport
from verifier.results.levels import TABLE as LEVELS
from verifier.results.notes import case_not_run
from verifier.results.options import Options, derived_seed

MAX_ROWS = 16


def hypothesis_max_cols(device: str) -> int:
    """The longest Hypothesis-drawn row: shorter on CPU, where launches are emulated and slow."""
    return 8192 if device == "cpu" else 16384


def examples(level: str) -> int:
    return LEVELS[level].hypothesis


class _CudaFault(BaseException):
    """Stops Hypothesis at once: it would replay every shrink candidate in an unusable context."""


def check_shapes(spec: KernelSpec, dt, opts: Options, report: Optional[KernelReport] = None, *,
                 run: Optional[Callable] = None, say: Optional[Callable[[str], None]] = None) -> int:
    """Run the Hypothesis step of one dtype into ``report`` (findings, inputs judged / raising); returns how
    many drawn inputs ran. Cells are not marked: the values checks pass over all of their inputs. ``say(case)``
    is told each drawn input before it runs (a child that dies names it)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run = run or runner_for(spec)
    n = opts.run_level.hypothesis
    if not n:
        return 0
    from verifier.battery.flaky import Flaky, flaky_finding  # imports hypothesis (about 1 s): not at the quick level

    failing: list = []
    warned: list = []
    ran, judged, vacuous = [0], [0], [0]

    @hseed(derived_seed(opts.seed, spec.name, dt.tag, "hypothesis"))
    @settings(max_examples=n, database=None, deadline=None, derandomize=False, print_blob=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink],
              report_multiple_bugs=False)
    @given(shape=_inputs.shapes(MAX_ROWS, hypothesis_max_cols(opts.device)), data_seed=st.integers(0, 2**31 - 1))
    def prop(shape, data_seed):
        M, N = shape
        case = f"hypothesis:{M}x{N}:rng{data_seed}"  # verifier.inputs.cases.hypothesis_case parses it back
        if gate.before_inputs(spec, dt, case, M, N) is not None:
            return  # drawn shapes outside supports() are not the kernel's to run
        xs = random_inputs(spec, dt, M, N, np.random.default_rng(data_seed))
        closed = gate.after_inputs(spec, dt, case, xs, opts.device)
        if closed is not None:  # the same gate as catalogue cases: never a silent drop
            report.notes.append(case_not_run(f"[{dt.tag}] {closed.text}"))
            return
        ran[0] += 1
        if say is not None:
            say(case)
        probe = KernelReport(spec=spec, device=opts.device)
        try:
            run_case(spec, dt, case, xs, opts, probe, run=run)
        except gate.NotRun as e:  # an interpreter gap: said, not judged
            ran[0] -= 1
            report.notes.append(case_not_run(f"[{dt.tag}] {e.closed.text}"))
            return
        except KernelFault as e:  # a CUDA fault: recorded in probe, nothing more can run
            failing[:] = [probe.findings]
            raise _CudaFault(e) from e
        finally:
            for k, v in probe.inputs.items():  # inputs judged / raising, for the raised-on-every-input rule
                report.inputs[k] = report.inputs.get(k, 0) + v if k != "first" else report.inputs.get(k, v)
        judged[0] += probe.judged.get(dt.tag, 0)
        vacuous[0] += probe.vacuous.get(dt.tag, 0)  # (its note stays with the probe: drawn inputs are many)
        if any(f.severity == "error" for f in probe.findings):
            failing[:] = [probe.findings]  # the last failure Hypothesis replays is the shrunk one
            raise AssertionError(case)
        if probe.findings and not warned:
            warned[:] = probe.findings

    try:
        prop()
    except AssertionError:
        for f in failing[0]:
            report.add(f)
    except _CudaFault as e:
        for f in failing[0] if failing else []:
            report.add(f)
        raise e.args[0] from None
    except Flaky as e:  # an example failed, then passed when replayed: the kernel is flaky, a finding
        report.add(flaky_finding(spec, dt, opts, failing[0] if failing else [], e))
    else:
        for f in warned:
            report.add(f)
    finally:
        report.judged[dt.tag] = report.judged.get(dt.tag, 0) + judged[0]
        report.vacuous[dt.tag] = report.vacuous.get(dt.tag, 0) + vacuous[0]
    return ran[0]
