"""On a GPU, compiled (the CPU suites run them in the Triton interpreter): the Triton softmax writing y and lse
(kernels/triton/softmax_lse_spec.py) passes its ci battery in every dtype, and its three lse defect twins
(kernels/defects/triton/softmax_lse_defects.py: the sink left out, the max not added back, a dead row's -inf where
+inf is declared) are each caught by their declared class on their exposing input."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _specs(path):
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(path)}


@pytest.mark.parametrize("name", ["triton-softmax-lse", "triton-softmax-lse-sinks-base2"])
def test_the_triton_softmax_with_lse_passes_compiled(name):
    from dataclasses import replace

    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import FLOAT_IO

    spec = replace(_specs(ROOT / "kernels" / "triton" / "softmax_lse_spec.py")[name], dtypes=FLOAT_IO)
    report = check_kernel(spec, Options(level="ci", device="cuda"))
    assert report.verdict == "pass", "\n".join(f"{f.check} {f.dtype} {f.input}: {f.message}" for f in report.findings)


@pytest.mark.parametrize("name,check,case", [
    ("defect-triton-softmax-lse-no-sink", "value", "normal_small"),
    ("defect-triton-softmax-lse-no-max", "value", "normal_small"),
    ("defect-triton-softmax-lse-dead-row-neginf", "nan-inf", "sm_mask_full_rows")])
def test_the_lse_defects_are_caught_compiled(name, check, case):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    report = check_kernel(_specs(ROOT / "kernels" / "defects" / "triton" / "defects.py")[name],
                          Options(level="ci", device="cuda", case=case))
    assert report.verdict == "fail" and any(f.check == check for f in report.findings), report.findings
