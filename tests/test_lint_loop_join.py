"""A loop counter read after the loop that nvcc split into a remainder loop and a 4x-unrolled one
(`for (i = lane; i < n; i += 32)`): the unrolled loop starts from the join of the remainder loop's exit and the
path that skipped it, `lane + 32 k` per thread. That join was one opaque per-thread value, so a warp staging its
row in shared memory (ggml's cross_entropy_loss_f32) got a "cannot decide" shared-race warning; as `lane + 32 k`
two lanes never meet, while a step of 16 (lane l + 16 writes what lane l reads) is still a race."""
from pathlib import Path

import pytest

from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
SRC = Path(__file__).parent / "data" / "lint_loop_join" / "warp_stage.cu"


def _lint(entry):
    spec = CudaKernel(name="warp-stage", op="reduce_sum", source=str(SRC), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry, (M,), (32,), ("x", "y", "N"), smem=4 * N)])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), ("sm_90",))
    return [f.message for f in report.findings]


def test_lanes_striding_by_the_warp_never_meet():
    assert _lint("stage_own") == []


def test_a_smaller_stride_is_still_a_race():
    found = _lint("stage_shared")
    assert any(m.startswith("shared-race") for m in found), found
