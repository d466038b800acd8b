"""Launch(cooperative=True) on the GPU: tests/data/cooperative/coop_sum.cu sums rows with a grid of blocks joined by
grid.sync(); launched cooperatively it passes, launched plainly its grid check traps (a crash finding)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from verifier.gpu.probe import driver_device_count

SPEC = Path(__file__).resolve().parent / "data" / "cooperative" / "coop_sum_spec.py"


def _gpu_reason():
    if driver_device_count() == 0:
        return "needs an NVIDIA GPU and its driver (libcuda sees no device)"
    if shutil.which("nvcc") is None:
        return "needs nvcc to build tests/data/cooperative/coop_sum.cu"
    return None


_REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_a_cooperative_launch_runs_grid_sync_and_a_plain_one_does_not():
    from verifier.declare.registry import load_spec_file
    from verifier.isolation import check_all
    from verifier.results.options import Options

    specs = load_spec_file(str(SPEC))  # each in a child process: the plain launch's trap poisons its context
    reports = {r.spec.name: r for r in check_all(specs, Options(level="quick", device="cuda"), isolate=True)}
    good = reports["coop-row-sum"]
    assert good.verdict == "pass", [f.message for f in good.findings]
    plain = reports["coop-row-sum-plain-launch"]
    assert plain.verdict == "fail", [f.message for f in plain.findings]
