"""A ``trap`` aborts the whole grid: no thread is left waiting at a barrier after it. The divergent-barrier check took
it for an early exit, so every kernel with a thread-dependent ``__trap()`` (cooperative groups' grid sync checks its
grid that way; a NaN guard) got a false "barrier reached after an early exit" error. The same guard with ``return``
is still the defect it is."""
import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")

SRC = """extern "C" __global__ void guarded(const float* x, float* y) {
  __shared__ float s[256];
  const float v = x[blockIdx.x * 256 + threadIdx.x];
  if (v != v) { LEAVE; }
  s[threadIdx.x] = v;
  __syncthreads();
  y[blockIdx.x * 256 + threadIdx.x] = s[255 - threadIdx.x];
}
"""


def _findings(tmp_path, leave: str):
    src = tmp_path / f"guarded_{leave[:6].strip('_();')}.cu"
    src.write_text(SRC.replace("LEAVE", leave))
    spec = CudaKernel(name="guarded", op="softmax", source=str(src), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("guarded", (M,), (256,), ("x", "y"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return [f.message for f in report.findings]


def test_a_trap_is_no_early_exit(tmp_path):
    assert _findings(tmp_path, "__trap()") == []


def test_a_return_there_still_is(tmp_path):
    msgs = _findings(tmp_path, "return")
    assert any(m.startswith("divergent-barrier:") and "early exit" in m for m in msgs), msgs
