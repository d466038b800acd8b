"""``launches`` may return [] where the host launches nothing at a shape (DeepSpeed's inference RMSNorm and
LayerNorm launch nothing for fp32 rows of 65-128 elements and past 16384: their output is left as it was). Before,
[] was a SpecError, so such a spec had to refuse those shapes and the defect never showed; now the build, lint
and launch checks take it, and on a GPU the outputs are judged as they are (unwritten). None, a forgotten
``return``, stays a SpecError."""
import pytest

from gpu_requirements import gpu_and_nvcc_reason
from verifier.errors import SpecError
from verifier.launch.cuda import launches_for
from verifier.results.options import Options
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

SRC = ('extern "C" __global__ void row_sum(const float* x, float* y, int M, int N) {\n'
       '  const long long r = blockIdx.x;\n'
       '  if (threadIdx.x != 0) return;\n'
       '  float a = 0.f;\n'
       '  for (int i = 0; i < N; ++i) a += x[r * N + i];\n'
       '  y[r] = a;\n}\n')


def _spec(tmp_path, launches):
    src = tmp_path / "row_sum.cu"
    src.write_text(SRC)
    return CudaKernel(name="dispatch-gap", op="reduce_sum", source=str(src), dtypes=[dtypes("f32")],
                      launches=launches)


def _gap(M, N, dt, p):  # the host's dispatch has no case past 64 columns
    return [Launch("row_sum", (M,), (32,), ("x", "y", "M", "N"))] if N <= 64 else []


def test_an_empty_list_is_no_launch_and_none_is_a_spec_error(tmp_path):
    spec = _spec(tmp_path, _gap)
    assert launches_for(spec, 4, 128, spec.dtypes[0], {}) == []
    assert len(launches_for(spec, 4, 32, spec.dtypes[0], {})) == 1
    forgot = _spec(tmp_path, lambda M, N, dt, p: None)
    with pytest.raises(SpecError, match="must return a list of Launch, not NoneType"):
        launches_for(forgot, 4, 32, forgot.dtypes[0], {})


@pytest.mark.skipif(nvcc_version() is None, reason="the build and static steps compile with nvcc, not found")
def test_build_and_static_take_shapes_without_launches(tmp_path):
    from verifier.battery import check_kernel

    report = check_kernel(_spec(tmp_path, _gap), Options(level="ci", device="cpu"))
    assert report.error is None and not [f for f in report.findings if f.severity == "error"], \
        (report.error, report.findings)
    assert report.cells[("f32", "build")].status == "pass"


@pytest.mark.gpu
@pytest.mark.skipif(gpu_and_nvcc_reason() is not None, reason=gpu_and_nvcc_reason() or "")
def test_on_a_gpu_the_outputs_of_a_shape_without_launches_are_unwritten(tmp_path):
    from verifier.battery import check_kernel

    report = check_kernel(_spec(tmp_path, _gap), Options(level="ci", device="cuda"))
    assert any(f.check == "unwritten" for f in report.findings), report.findings
    assert report.verdict == "fail"


@pytest.mark.skipif(nvcc_version() is None, reason="the build and static steps compile with nvcc, not found")
def test_launches_empty_at_every_shape_check_nothing_and_say_so(tmp_path):
    """A spec whose launches are [] everywhere launches nothing: its resources and static cells are skipped with
    the reason (never a pass)."""
    from verifier.battery import check_kernel

    report = check_kernel(_spec(tmp_path, lambda M, N, dt, p: []), Options(level="quick", device="cpu"))
    for check in ("resources", "static"):
        cell = report.cells[("f32", check)]
        assert cell.skipped and "launches() returns []" in str(cell), (check, cell)
    assert report.verdict != "pass"
