"""Workspace(values=...) on the GPU: dims_sum.cu reads the row length and strides only from the device array the
spec declares (tests/data/workspace_values/), so it passes when the values are the host's and fails (a value
finding, the last column left out) when they are off by one."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from verifier.gpu.probe import driver_device_count

SPEC = Path(__file__).resolve().parent / "data" / "workspace_values" / "dims_sum_spec.py"


def _gpu_reason():
    if driver_device_count() == 0:
        return "needs an NVIDIA GPU and its driver (libcuda sees no device)"
    if shutil.which("nvcc") is None:
        return "needs nvcc to build tests/data/workspace_values/dims_sum.cu"
    return None


_REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_the_kernel_sees_the_declared_values():
    from verifier.declare.registry import load_spec_file
    from verifier.isolation import check_all
    from verifier.results.options import Options

    reports = {r.spec.name: r for r in check_all(load_spec_file(str(SPEC)), Options(level="quick", device="cuda"),
                                                 isolate=True)}
    good = reports["dims-sum"]
    assert good.verdict == "pass", [f.message for f in good.findings]
    wrong = reports["dims-sum-wrong-dims"]
    assert wrong.verdict == "fail" and any(f.check == "value" for f in wrong.findings), \
        [f.message for f in wrong.findings]
