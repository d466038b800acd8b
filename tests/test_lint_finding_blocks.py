"""A static finding names the block shapes it was found at, not every shape the entry is launched with: an
inactive-lanes finding of a 16-thread block (FasterTransformer's generalT5LayerNorm<half> at 32 columns) was
listed as `block 16x1x1, 512x1x1`, as if a full 512-thread block read missing lanes too."""
from pathlib import Path

import pytest

from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
SRC = Path(__file__).parent / "data" / "lint_finding_blocks" / "half_block.cu"


def test_an_inactive_lanes_finding_names_only_the_short_block():
    spec = CudaKernel(name="half-block", op="reduce_sum", source=str(SRC), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("row_sumsq", (M,), (N // 2 if N == 32 else 512,),
                                                           ("x", "y", "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), ("sm_90",))
    lanes = [f.message for f in report.findings if f.message.startswith("inactive-lanes")]
    assert lanes, [f.message for f in report.findings]
    assert all("; block 16x1x1; " in m and "512x1x1" not in m for m in lanes), lanes
