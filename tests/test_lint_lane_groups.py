"""A full-mask shuffle after a thread-dependent exit (verifier.lint.lanegroups): clean when the lanes that leave
never shuffle again and no lane reads across the lanes that share the guard (OneFlow's SoftmaxWarpImpl: groups of
2..16 lanes per row, a grid-stride loop over rows); an inactive-lanes error otherwise
(tests/data/lint/lane_group_exit.cu)."""
from pathlib import Path

import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, Scalar, dtypes
from verifier.toolchain.nvcc import nvcc_version

SRC = Path(__file__).resolve().parent / "data" / "lint" / "lane_group_exit.cu"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def _lint(entry):
    group16 = entry.startswith("group16")  # 16 lanes per row, 64-thread blocks, one more argument
    spec = CudaKernel(name=entry, op="reduce_sum", source=str(SRC), dtypes=[dtypes("f32")],
                      supports=lambda M, N, dt: None if N <= 4 else "N <= 4",
                      launches=lambda M, N, dt, p: [Launch(entry, (-(-M // 4),), (64,), ("x", "y", Scalar("int64", "M"),
                                                                                      "N", Scalar("int32", 1)))]
                      if group16 else [Launch(entry, (-(-M // 8),), (32,), ("x", "y", Scalar("int64", "M"), "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return report


@pytest.mark.parametrize("entry", ["group_return_ok", "group_stride_loop_ok", "group16_block_offset_ok"])
def test_groups_that_leave_before_a_shuffle_within_groups_are_clean(entry):
    r = _lint(entry)
    assert not r.findings, [f.message for f in r.findings]
    assert r.verdict == "pass"


@pytest.mark.parametrize("entry", ["cross_group_bad", "other_side_shuffles_bad", "per_lane_guard_bad",
                                   "group16_misaligned_bad"])
def test_a_read_across_the_guard_or_a_side_that_stays_is_an_error(entry):
    r = _lint(entry)
    assert r.verdict == "fail"
    assert any("inactive-lanes" in f.message and "0xffffffff" in f.message for f in r.findings), \
        [f.message for f in r.findings]


def test_a_kernel_limited_to_head_dims_is_still_linted():
    # supports() takes none of PROBE_N (only N == 128, a head dim): the fallback lengths reach its launch, so the
    # defect is found rather than the static step skipped (verifier.inputs.cases.FALLBACK_N)
    spec = CudaKernel(name="head_dim_only", op="reduce_sum", source=str(SRC), dtypes=[dtypes("f32")],
                      supports=lambda M, N, dt: None if N == 128 else "head_dim 128 only",
                      launches=lambda M, N, dt, p: [Launch("per_lane_guard_bad", (-(-M // 32),), (32,),
                                                           ("x", "y", Scalar("int64", "M"), "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    assert report.verdict == "fail", [f.message for f in report.findings]
    assert any("inactive-lanes" in f.message for f in report.findings)
