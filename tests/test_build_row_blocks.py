"""The build step's resource check reaches a kernel that takes rows in whole blocks (supports() refusing 4 rows:
Megatron's upper-triangular softmax takes batches x N rows, batches a multiple of its rows per block): its probe
lengths are evaluated at the first of 4, 1, 64 or 4096 rows supports() accepts, as verifier lint's; where it accepts
none, the resources cell says nothing was checked instead of passing."""
import pytest

from verifier.battery.build import check_build
from verifier.results.options import Options
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="the build step compiles with nvcc, not found")
SRC = ('extern "C" __global__ void rows64(const float* x, float* y, int M, int N) {\n'
       '  const int r = blockIdx.x * 64 + threadIdx.x;\n'
       '  float a = 0.f;\n'
       '  for (int i = 0; i < N; ++i) a += x[(long long)r * N + i];\n'
       '  y[r] = a;\n}\n')


def _build(tmp_path, rows):
    src = tmp_path / "rows64.cu"
    src.write_text(SRC)
    spec = CudaKernel(name="rows64", op="reduce_sum", source=str(src), dtypes=[dtypes("f32")],
                      supports=lambda M, N, dt: None if M % rows == 0 else f"M a multiple of {rows}",
                      launches=lambda M, N, dt, p: [Launch("rows64", (M // 64,), (64,), ("x", "y", "M", "N"))])
    return check_build(spec, Options(level="quick", device="cpu"), spec.dtypes)


def test_a_kernel_refusing_four_rows_has_its_entry_resource_checked(tmp_path):
    r = _build(tmp_path, 64)
    assert any(n.startswith("[sm_90] rows64: ") and "registers" in n for n in r.notes), r.notes
    assert r.cells[("f32", "resources")].status == "pass"


def test_nothing_checked_is_not_a_pass(tmp_path):
    r = _build(tmp_path, 3 << 20)  # no probe row count (nor 1 or 4 times a probe length) is a multiple
    cell = r.cells[("f32", "resources")]
    assert cell.skipped and "supports() accepts none of the shapes the build step evaluates" in str(cell), cell
    assert not any("registers" in n for n in r.notes), r.notes


def test_rows_in_whole_square_blocks_are_reached_by_the_build_and_lint(tmp_path):
    """Megatron's upper-triangular softmax takes batches x N rows: at N = 8192 and more no probe row count of 1, 4,
    64 or 4096 is a multiple of N, so neither the resources nor the lint ever saw those entries; a multiple of N is
    tried where none is accepted."""
    from verifier.lint.step import launch_facts

    src = tmp_path / "rows64.cu"
    src.write_text(SRC)
    spec = CudaKernel(name="rows64", op="reduce_sum", source=str(src), dtypes=[dtypes("f32")],
                      supports=lambda M, N, dt: None if N >= 8192 and M % N == 0 else "square blocks of N >= 8192",
                      launches=lambda M, N, dt, p: [Launch("rows64", (M // 64,), (64,), ("x", "y", "M", "N"))])
    r = check_build(spec, Options(level="quick", device="cpu"), spec.dtypes)
    assert r.cells[("f32", "resources")].status == "pass", r.cells[("f32", "resources")]
    assert "rows64" in launch_facts(spec, spec.dtypes)
