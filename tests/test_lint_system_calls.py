"""assert() and printf() in a kernel compile to calls of CUDA's __assertfail and vprintf: they print (and
__assertfail ends the kernel), with no barrier, no shared memory and no warp collective. Such a call is not a
``not-followed`` warning (it was on every kernel keeping an assert in a block reduction: ggml's block_reduce), and
the checks around it still see the kernel's own races; a call of the kernel's own functions still warns."""
import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")

SRC = """#include <cassert>
#include <cstdio>
extern "C" __global__ void k(const float* x, float* y, int n) {
  __shared__ float s[8];
  float v = x[blockIdx.x * 256 + threadIdx.x];
  assert(blockDim.x <= 1024 && n >= 0);
  if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
  SYNC
  if (n > 1 << 30) printf("n = %d\\n", n);
  if (threadIdx.x == 0) { float t = 0.f; for (int i = 0; i < 8; i++) t += s[i]; y[blockIdx.x] = t; }
}
"""


def _findings(tmp_path, sync: str):
    src = tmp_path / f"asserts_{bool(sync)}.cu"
    src.write_text(SRC.replace("SYNC", sync))
    spec = CudaKernel(name="asserts", op="reduce_sum", source=str(src), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("k", (M,), (256,), ("x", "y", "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return [f.message for f in report.findings]


def test_assert_and_printf_are_no_warning(tmp_path):
    assert _findings(tmp_path, "__syncthreads();") == []


def test_a_race_beside_them_is_still_found(tmp_path):
    msgs = _findings(tmp_path, "")
    assert any(m.startswith("shared-race:") for m in msgs), msgs
    assert not any(m.startswith("not-followed:") for m in msgs), msgs
