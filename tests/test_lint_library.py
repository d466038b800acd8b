"""verifier lint on library-style code (issue #35 item 12): block reductions launched with min(N, 1024) threads,
whose full-mask shuffles name lanes a partial last warp does not have. Absent lanes never block a shfl.sync;
what they would give is undefined, so a shuffle is a finding only when a value read from an absent lane can
reach an output (tests/data/lint/library_cases.cu, cub_partial_block.cu)."""
from pathlib import Path

import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

DATA = Path(__file__).resolve().parent / "data" / "lint"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def _lint(source, entry, block=lambda N: (min(N, 1024),)):
    spec = CudaKernel(name=entry, op="reduce_sum", source=str(source), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry=entry, grid=(M,), block=block(N), args=("x", "y", "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return report


def _shown(report) -> list:
    return [f.message.splitlines()[:3] for f in report.findings]


@pytest.mark.parametrize("entry", ["clamp_ok", "select_ok"])
def test_a_shuffle_whose_absent_lanes_values_are_discarded_is_clean(entry):
    # the clamp operand makes lanes past the warp's valid count out of range (own value, predicate false), or a
    # select on lane + offset < valid keeps the old value: nothing read from a missing lane is used
    r = _lint(DATA / "library_cases.cu", entry)
    assert not r.findings, _shown(r)
    assert r.verdict == "pass"


@pytest.mark.parametrize("entry", ["unguarded_bad", "select_wrong_bound_bad"])
def test_a_value_read_from_an_absent_lane_that_reaches_the_output_is_an_error(entry):
    r = _lint(DATA / "library_cases.cu", entry)
    errors = [f for f in r.findings if f.severity == "error"]
    assert errors and r.verdict == "fail", _shown(r)
    (f,) = errors
    head, at, out = f.message.splitlines()[:3]
    assert head.startswith("inactive-lanes: `shfl.sync.down.b32`") and "not a multiple of 32" in head, head
    assert "which does not exist, and the undefined value reaches `st.shared.f32`" in head, head
    assert "library_cases.cu:44" in at and out.strip().startswith("output at") and "library_cases.cu:61" in out


def test_the_finding_names_the_lane_read():
    # block 33: warp 1 has one lane; its lane 0 reads lane 1 at offset 1
    r = _lint(DATA / "library_cases.cu", "unguarded_bad", block=lambda N: (33,))
    (f,) = r.findings
    assert "block 33x1x1 (33 threads" in f.message and "thread 32 (lane 0 of warp 1) reads lane 1" in f.message, \
        f.message


def test_whole_warps_are_not_a_partial_warp():
    # the same defective tree in 128-thread blocks reads no missing lane: no finding
    assert not _lint(DATA / "library_cases.cu", "unguarded_bad", block=lambda N: (128,)).findings


def test_cub_block_reduce_over_a_partial_warp_is_clean():
    # the toolkit's own cub::BlockReduce (warp reductions) in 100-thread blocks: a 4-lane last warp
    r = _lint(DATA / "cub_partial_block.cu", "cub_warp_reductions_100", block=lambda N: (100,))
    assert not r.findings, _shown(r)


WELFORD = DATA / "welford_cases.cu"


def _lint_2d(entry, rows):
    spec = CudaKernel(name=entry, op="reduce_sum", source=str(WELFORD), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry=entry, grid=(M,), block=(32, rows),
                                                           args=("x", "y", "M", "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return report


@pytest.mark.parametrize("rows", [4, 8, 16])
@pytest.mark.parametrize("entry", ["const_ok", "ntid_ok", "rows_ok"])
def test_a_welford_merge_stepped_by_blockdim_is_clean(entry, rows):
    # `for (offset = blockDim.y / 2; offset > 0; offset /= 2)`: nvcc keeps the loop, the lint runs it one step
    # at a time with the launch's blockDim.y (once a WAW of `pair[2 * at]` between threads the guard
    # `threadIdx.x == 0 && threadIdx.y >= offset && ...` keeps apart, as the guard read a loop counter)
    r = _lint_2d(entry, rows)
    if entry == "const_ok" and rows == 4:  # merges 8 rows, 4 launched: rows 0-3 read the slots of rows 4-7
        assert [f.message.split(":")[0] for f in r.findings] == ["unwritten-shared"], _shown(r)
        return
    assert not r.findings, _shown(r)


@pytest.mark.parametrize("rows", [4, 16])
@pytest.mark.parametrize("entry, line", [("ntid_missing_barrier_bad", "welford_cases.cu:33"),
                                         ("rows_missing_barrier_bad", "welford_cases.cu:71")])
def test_a_welford_merge_without_its_second_barrier_is_a_race(entry, line, rows):
    # the next step's store into a slot of the lower half races with that row's read of it in this step: a WAR
    # between two iterations (once only a "cannot decide" warning at 8 rows, and nothing at 4)
    r = _lint_2d(entry, rows)
    errors = [f.message.splitlines() for f in r.findings if f.severity == "error"]
    assert errors and r.verdict == "fail", _shown(r)
    assert all(e[0].startswith("shared-race: WAR hazard") and "a missing __syncthreads()" in e[0] for e in errors)
    assert any(line in e[1] for e in errors), errors


def test_a_value_read_from_an_absent_lane_is_followed_into_a_vector_store():
    r = _lint(DATA / "library_cases.cu", "vector_store_bad", block=lambda N: (48,))
    (f,) = r.findings
    assert f.severity == "error" and "thread 32 (lane 0 of warp 1) reads lane 16" in f.message, f.message
    assert "reaches `st.global.v2.f32`" in f.message, f.message
