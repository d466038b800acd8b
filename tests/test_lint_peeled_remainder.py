"""A block-stride loop staging a row in shared memory (``for (p = tid; p < n; p += 128) buf[p] = ...``), which
nvcc unrolls by 4 after peeling up to 3 remainder iterations: the unrolled loop's counter starts at the join of
``tid``, ``tid + 128``, ``tid + 256`` and ``tid + 384``. The race check read that join as an opaque value (a run-time
multiple of 4 bytes), so two threads' stores "could meet" and a correct kernel got a shared-race warning; the join
is now read as ``tid + k * 128`` (k >= 0), so the stores differ modulo 512 bytes between threads. A loop stepping by
less than the block (64 on 128 threads: threads t and t + 64 store to one element) is still a finding."""
import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, Scalar, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")

SRC = """template <int STEP>
__global__ void stage(const float* x, float* y, long long rows, long long cols) {
  extern __shared__ float buf[];
  const int n = cols;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    for (int p = threadIdx.x; p < n; p += STEP) buf[p] = x[row * cols + p] + threadIdx.x;
    __syncthreads();
    for (int p = threadIdx.x; p < n; p += STEP) y[row * cols + p] = buf[p] * 2.f;
    __syncthreads();
  }
}
template __global__ void stage<128>(const float*, float*, long long, long long);
template __global__ void stage<64>(const float*, float*, long long, long long);
"""


def _findings(tmp_path, step):
    src = tmp_path / "stage.cu"
    src.write_text(SRC)
    spec = CudaKernel(name="stage", op="softmax", source=str(src), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(f"stage<{step}>", (min(M, 4096),), (128,),
                                                           ("x", "y", Scalar("int64", "M"), Scalar("int64", "N")),
                                                           smem=4 * N)])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return [(f.severity, f.message) for f in report.findings]


def test_block_stride_staging_is_no_race(tmp_path):
    assert _findings(tmp_path, 128) == []


def test_half_block_stride_still_races(tmp_path):
    got = _findings(tmp_path, 64)
    assert any(msg.startswith("shared-race:") for _, msg in got), got
