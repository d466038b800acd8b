"""A __syncwarp whose member mask names only some lanes (the first-warp stage of a block reduction:
``if (lane < warps) { ...; __syncwarp((1 << warps) - 1); smem[lane] = v; }``, as PyTorch's old cunn block reduce and
its copies in ONNX Runtime and CTranslate2 write it) orders the lanes it names when exactly those lanes of a warp
run it; the lint reported a WAR race between two of them (thread 0 reads, thread 1 writes)."""
from pathlib import Path

import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

DATA = Path(__file__).resolve().parent / "data" / "lint" / "partial_syncwarp.cu"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def _lint(entry, block):
    spec = CudaKernel(name=entry, op="reduce_sum", source=str(DATA), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry=entry, grid=(M,), block=(block,), args=("x", "y"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return report


@pytest.mark.parametrize("block", [256, 1024])
def test_a_syncwarp_naming_exactly_the_lanes_that_run_it_orders_them(block):
    r = _lint("partial_syncwarp_ok", block)
    assert not r.findings, [f.message for f in r.findings]


def test_a_mask_leaving_out_a_lane_that_runs_it_orders_nothing():
    # lane 0 runs __syncwarp(0xfe): not a meeting point (undefined behaviour in CUDA): lane 0's reads of slot 1
    # and lane 1's store to it stay unordered
    r = _lint("partial_syncwarp_wrong_mask", 256)
    errors = [f.message for f in r.findings if f.severity == "error"]
    assert any(m.startswith("shared-race: WAR hazard") and "a missing __syncwarp()" in m for m in errors), errors
