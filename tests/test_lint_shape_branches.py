"""verifier lint at each block shape of the launches: a branch on blockDim alone goes one way in every thread, so
a barrier under `if (blockDim.x > 32)` orders what it separates at the shapes where it runs (ggml's soft_max_f32
with a run-time block size once had a false WAR error: the path skipping the barrier was taken as possible at
64 threads); the same barrier missing at a shape that needs it is still an error
(tests/data/lint/shape_guarded_barrier.cu)."""
from pathlib import Path

import pytest

from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

SRC = Path(__file__).resolve().parent / "data" / "lint" / "shape_guarded_barrier.cu"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def _lint(entry):
    def launches(M, N, dt, params):  # one, two and 32 warps, by row length
        return [Launch(entry, grid=(M,), block=(32 if N < 64 else 64 if N < 1024 else 1024,), args=("x", "y", "M", "N"))]

    spec = CudaKernel(name=entry.replace("_", "-"), op="reduce_sum", source=str(SRC), launches=launches,
                      dtypes=[dtypes("f32")])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), ("sm_90",))
    return report


def test_a_barrier_under_a_block_shape_branch_orders_where_it_runs():
    r = _lint("guarded_sync_ok")
    assert not r.findings, [f.message for f in r.findings]


def test_the_barrier_skipped_at_a_shape_that_needs_it_is_an_error():
    r = _lint("guarded_sync_bad")
    (f,) = [f for f in r.findings if f.severity == "error"]
    assert f.message.startswith("shared-race: WAR hazard"), f.message
    assert "shape_guarded_barrier.cu:9" in f.message and "shape_guarded_barrier.cu:7" in f.message, f.message
