"""The build step's resource check reaches the entries a host picks only at 65537 rows (ONNX Runtime's softmax takes
another kernel from 8192 rows) or only at the large shapes (a 64-bit-index variant past 2^31 elements): lint analysed
them, but the build step evaluated 1 to 4096 rows and the catalogue cases only, so their registers, spills and stack
were never checked against ``expectations`` (a silent pass of a kernel that breaks its promise there). Each problem is
said once per arch."""
import pytest

from verifier.battery.build import check_build
from verifier.results.options import Options
from verifier.spec import CudaKernel, Expectations, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="the build step compiles with nvcc, not found")
SRC = ('extern "C" __global__ void rows_plain(const float* x, float* y, int M, int N) {\n'
       '  if (threadIdx.x == 0) y[blockIdx.x] = x[(long long)blockIdx.x * N];\n}\n'
       'extern "C" __global__ void rows_stacked(const float* x, float* y, int M, int N) {\n'
       '  float buf[64];  // indexed by a loaded value: a local array on the stack\n'
       '  for (int i = 0; i < 64; ++i) buf[i] = x[(long long)blockIdx.x * N + i % N];\n'
       '  if (threadIdx.x == 0) y[blockIdx.x] = buf[__float_as_int(x[0]) & 63];\n}\n')


def _build(tmp_path, pick):
    src = tmp_path / "rows.cu"
    src.write_text(SRC)
    spec = CudaKernel(name="rows", op="reduce_sum", source=str(src), dtypes=[dtypes("f32")],
                      expectations=Expectations(max_stack_bytes=0),
                      launches=lambda M, N, dt, p: [Launch(pick(M, N), (M,), (32,), ("x", "y", "M", "N"))])
    return check_build(spec, Options(level="quick", device="cpu"), spec.dtypes)


@pytest.mark.parametrize("pick", [lambda M, N: "rows_stacked" if M >= 8192 else "rows_plain",
                                  lambda M, N: "rows_stacked" if M * N >= 2 ** 31 else "rows_plain"],
                         ids=["many_rows", "large_tensor"])
def test_an_entry_only_lint_shapes_reach_has_its_resources_checked_once(tmp_path, pick):
    r = _build(tmp_path, pick)
    stack = [f.message for f in r.findings if f.check == "resources" and "rows_stacked" in f.message]
    assert stack and all("bytes of stack" in m for m in stack), [f.message for f in r.findings]
    assert sorted(m[:m.index("]") + 1] for m in stack) == ["[sm_80]", "[sm_90]"], stack  # once per arch
    assert not [f for f in r.findings if f.check == "build"], [f.message for f in r.findings]


def test_the_entry_the_build_shapes_reach_is_checked_as_before(tmp_path):
    r = _build(tmp_path, lambda M, N: "rows_plain")
    assert not r.findings, [f.message for f in r.findings]
    assert r.cells[("f32", "resources")].status == "pass"
