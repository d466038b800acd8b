"""The strided case on a GPU with a real CUDA twin pair (tests/data/gpu/own_stride.cu): x and y each get a row
stride of their own (verifier.inputs.layouts.row_pad), so a kernel storing y at the x stride its launch passes
fails the case (before, both strides were N + 64 and it passed silently) and its twin passes it; on contiguous
rows both pass. tests/test_cuda_own_stride.py checks the same on the fake libcuda without a GPU."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

SPECS = Path(__file__).resolve().parent / "data" / "gpu" / "own_stride_spec.py"
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _check(name, case):
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    spec = next(k for k in load_spec_file(SPECS) if k.name == name)
    return check_kernel(spec, Options(level="ci", device="cuda", case=case))


def test_a_cuda_kernel_storing_y_at_xs_stride_fails_the_strided_case_and_its_twin_passes():
    bad = _check("gpu-rmsnorm-y-at-x-stride", "strided_rows_pad64")
    assert bad.error is None, bad.error
    assert bad.verdict == "fail", bad.verdict
    assert {f.check for f in bad.findings} & {"value", "out-of-range-write", "unwritten"}, \
        [f.message for f in bad.findings][:3]
    good = _check("gpu-rmsnorm-own-stride", "strided_rows_pad64")
    assert good.error is None and good.verdict == "pass" and not good.findings, [f.message for f in good.findings][:3]


@pytest.mark.parametrize("name", ["gpu-rmsnorm-own-stride", "gpu-rmsnorm-y-at-x-stride"])
def test_on_contiguous_rows_both_pass(name):
    r = _check(name, "normal_small")
    assert r.error is None and r.verdict == "pass" and not r.findings, [f.message for f in r.findings][:3]
