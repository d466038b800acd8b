"""A grid-stride loop unrolled by hand (``for (i = tid; i < n;) { for (j < 8) { if (i < n) t[j] = x[base + i];
i += blockDim.x; } }``, ggml's reduce_rows) leaves nvcc's counter update as ``mad.lo i, ntid, 7, i1`` with i1 = i +
ntid: ``i = (i + ntid) + 7 * ntid``. The offset check took that for a value it could not bound, so a launch whose
offsets stay far below 2^31 (one block: base 0) got a "cannot decide" offset-wrap warning; the counter is now read
as stepping by 8 * ntid, bounded by its loop's comparison. Many rows of such a loop (base = row * n in 32 bits)
still wrap: a definite finding."""
import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")

SRC = """extern "C" __global__ void rows_sum(const float* x, float* y, const int n) {
  const int row = blockIdx.x;
  float acc[8] = {0.f}, t[8];
  for (int i = threadIdx.x; i < n;) {
    for (int j = 0; j < 8; ++j) { t[j] = i < n ? x[row * n + i] : 0.f; i += blockDim.x; }
    for (int j = 0; j < 8; ++j) acc[j] += t[j];
  }
  float s = 0.f;
  for (int j = 0; j < 8; ++j) s += acc[j];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x == 0) y[row] = s;
}
"""


def _findings(tmp_path, grid):
    src = tmp_path / "rows_sum.cu"
    src.write_text(SRC)
    spec = CudaKernel(name="rows-sum", op="reduce_sum", source=str(src), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("rows_sum", grid(M), (32,), ("x", "y", "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return [(f.severity, f.message) for f in report.findings]


def test_one_block_unrolled_loop_is_no_warning(tmp_path):
    assert _findings(tmp_path, lambda M: (1,)) == []


def test_rows_of_it_still_wrap(tmp_path):
    got = _findings(tmp_path, lambda M: (M,))
    assert any(sev == "error" and msg.startswith("offset-wrap:") for sev, msg in got), got
