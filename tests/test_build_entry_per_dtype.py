"""An entry the cubin lacks is the build finding of the dtypes whose launches name it: a spec naming its bf16 entry
with the variant's tag (``fast_sum_bf16-bf16acc`` for ``fast_sum_bf16``) failed the f32 variant's build cell too,
whose entry is there. Named by every dtype, it stays one finding of the kernel."""
import pytest

from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="the build step needs nvcc, not found")

SRC = """#include <cuda_bf16.h>
extern "C" __global__ void copy_f32(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x]; }
extern "C" __global__ void copy_bf16(const __nv_bfloat16* x, __nv_bfloat16* y) { y[threadIdx.x] = x[threadIdx.x]; }
"""


def _cells(tmp_path, entry):
    src = tmp_path / "copies.cu"
    src.write_text(SRC)
    spec = CudaKernel(name="copies", op="softmax", source=str(src), dtypes=[dtypes("f32"), dtypes("bf16", acc="bf16")],
                      launches=lambda M, N, dt, p: [Launch(entry(dt), (1,), (32,), ("x", "y"))])
    report = check_kernel(spec, Options(level="quick", device="cpu"))
    return {tag: report.cells.get((tag, "build")) for tag in ("f32", "bf16-bf16acc")}, report


def test_a_missing_entry_fails_the_dtype_naming_it(tmp_path):
    cells, report = _cells(tmp_path, lambda dt: f"copy_{dt.tag}")
    assert cells == {"f32": "pass", "bf16-bf16acc": "FAIL"}, cells
    assert [f.dtype for f in report.findings if f.check == "build"] == ["bf16-bf16acc"] * len(report.findings)


def test_named_by_every_dtype_it_is_the_kernels(tmp_path):
    _, report = _cells(tmp_path, lambda dt: "copy_f64")
    assert report.cells[("*", "build")] == "FAIL"  # every dtype's row
    assert all(f.dtype == "" for f in report.findings if f.check == "build")
