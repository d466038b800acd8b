"""Entries a host picks by the row count (ONNX Runtime's softmax: another kernel from 8192 rows) or by the tensor's
size (a 64-bit-index variant past 2^31 elements) are analysed too: lint evaluated the launches at 1 to 4096 rows
only, and an entry launched only at the large shapes had no launch facts, so neither was analysed and nothing said
so (a silent pass of a racy entry)."""
from pathlib import Path

import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes, max_row
from verifier.toolchain.nvcc import nvcc_version

DATA = Path(__file__).resolve().parent / "data" / "lint" / "row_count_dispatch.cu"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def _lint(pick):
    spec = CudaKernel(name="rows", op="softmax", source=str(DATA), dtypes=[dtypes("f32")], supports=max_row(256),
                      launches=lambda M, N, dt, p: [Launch(pick(M, N), grid=(M,), block=(256,), args=("x", "y", "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return report


@pytest.mark.parametrize("entry, pick", [
    ("rows_many_race", lambda M, N: "rows_many_race" if M >= 8192 else "rows_few"),
    ("rows_huge_race", lambda M, N: "rows_huge_race" if M * N >= 2 ** 31 else "rows_few"),
])
def test_an_entry_only_many_rows_or_a_large_tensor_reach_is_analysed(entry, pick):
    r = _lint(pick)
    races = [f.message for f in r.findings if f.message.startswith("shared-race: WAR hazard")]
    assert races and all(f"in {entry}" in m for m in races), [f.message for f in r.findings]


def test_the_entry_of_few_rows_is_clean():
    r = _lint(lambda M, N: "rows_few")
    assert not r.findings, [f.message for f in r.findings]
