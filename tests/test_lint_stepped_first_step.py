"""A barrier-stepped loop entered afresh from outside it (the next row of a grid-stride loop, ONNX Runtime's
cuApplyLayerNorm: ``for (i1 = blockIdx.y; i1 < n1; i1 += gridDim.y) { ...; for (offset = blockDim.y / 2; ...) {
...; __syncthreads(); } ...; mu = ubuf[0]; ... }``) runs its first step there: the hazard check took the access in
it with the values of the step after the one of the other access, so at blockDim.y = 2 (one step, no next) the
race of the first step's store with the previous row's read was missed, and at 8 the pair it named was wrong."""
from pathlib import Path

import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

DATA = Path(__file__).resolve().parent / "data" / "lint" / "stepped_first_step.cu"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def _lint(entry, warps):
    spec = CudaKernel(name=entry, op="reduce_sum", source=str(DATA), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry=entry, grid=(M,), block=(32, warps),
                                                           args=("x", "y", "M", "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return report


@pytest.mark.parametrize("warps, writer", [(2, 32), (8, 128)])
def test_the_first_step_of_the_next_row_races_with_the_reads_of_the_row_before(warps, writer):
    r = _lint("rows_tree_race", warps)
    errors = [f.message for f in r.findings if f.severity == "error"]
    assert any(f"WAR hazard on shared memory: thread 0 reads s+0 and thread {writer} writes it" in m for m in errors), \
        [f.message for f in r.findings]


@pytest.mark.parametrize("warps", [2, 8])
def test_a_barrier_at_the_end_of_the_row_orders_them(warps):
    r = _lint("rows_tree_ok", warps)
    assert not r.findings, [f.message for f in r.findings]
