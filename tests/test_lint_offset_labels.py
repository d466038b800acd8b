"""An offset-wrap warning where the spec's launches cannot be made at the large shapes (an int32 argument given
M * N, as ONNX Runtime's skip layer norm takes `int skip_size`) names the kernel's parameters as the spec's
launches at the probe shapes do (`N`), not by position ("parameter 3"): the labels came from the large launches
only."""
from pathlib import Path

import pytest

from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, Scalar, dtypes
from verifier.toolchain.nvcc import nvcc_version

SRC = Path(__file__).resolve().parent / "data" / "lint" / "offset_cases.cu"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def test_a_warning_without_large_launches_names_the_parameters_as_the_spec_does():
    spec = CudaKernel(name="int-total", op="reduce_sum", source=str(SRC), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry="int_offset_bad", grid=(M,), block=(256,),
                                                           args=("x", "y", Scalar("int32", M * N), "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), ("sm_90",))
    (f,) = [f for f in report.findings if f.message.startswith("offset-wrap:")]
    head = f.message.splitlines()[0]
    assert "of blockIdx.x and N," in head and "parameter 3" not in head, head
