"""Shared-memory declarations as verifier lint reads them from the PTX: a scalar `__shared__ float scale;`
(`.shared .align 4 .f32 scale;`, no brackets) is a variable of its own. It was taken for the dynamic shared memory:
named `<dynamic shared memory>` in findings (SGLang's per_token_quant_fp8_kernel) and made one variable with an
`extern __shared__` buffer, so a store to each at offset 0 was a false race."""
import pytest

from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
SRC = '''
__device__ void body(const float* x, float* y, bool racy) {
    extern __shared__ float buf[];
    __shared__ float scale;
    buf[threadIdx.x] = x[(long long)blockIdx.x * 256 + threadIdx.x];
    if (threadIdx.x == 5) scale = 2.f;  // another variable than buf[0]: no race with thread 0's store
    if (racy && threadIdx.x % 32 == 0) scale = buf[threadIdx.x];  // every warp's lane 0 stores it: a real race
    __syncthreads();
    if (threadIdx.x == 0) y[blockIdx.x] = buf[255] * scale;
}
extern "C" __global__ void scalar_ok(const float* x, float* y, int M, int N) { body(x, y, false); }
extern "C" __global__ void scalar_racy(const float* x, float* y, int M, int N) { body(x, y, true); }
'''


def _lint(tmp_path, entry):
    src = tmp_path / "scalar_shared.cu"
    src.write_text(SRC)
    spec = CudaKernel(name="scalar-shared", op="reduce_sum", source=str(src), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry, (M,), (256,), ("x", "y", "M", "N"), smem=1024)])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), ("sm_90",))
    return report


def test_a_scalar_shared_variable_is_not_the_dynamic_buffer(tmp_path):
    r = _lint(tmp_path, "scalar_ok")
    assert not r.findings, [f.message for f in r.findings]


def test_its_own_race_names_it(tmp_path):
    r = _lint(tmp_path, "scalar_racy")
    errors = [f.message for f in r.findings if f.severity == "error"]
    assert any(m.startswith("shared-race: WAW hazard") and "writes scale+0" in m for m in errors), errors
