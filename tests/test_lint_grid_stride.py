"""Grid-stride row loops (``for (row = blockIdx.x; row < M; row += gridDim.x)``) whose rows reuse shared memory with
no barrier at a row's end: lint followed the loop's back edge whatever the launch, so a block reduction launched
with a grid of M blocks (each block runs its loop once) was reported as racing across rows, a false error (ONNX
Runtime's cuApplyLayerNorm at its probe shapes below 65536 rows). The race across rows stays where a launch lets a
block run two rows (a capped grid, grid.y past 65535 rows, a counter that wraps), naming that launch; a race within
one row, and a loop whose bound no launch value gives, stay as they were."""
from pathlib import Path

import pytest

from verifier.gpu.probe import CPU_BUILD_ARCHES
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, Scalar, dtypes
from verifier.toolchain.nvcc import nvcc_version

DATA = Path(__file__).resolve().parent / "data" / "lint" / "grid_stride.cu"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def _int_rows(M, N, dt):  # a counter `int row` stepping by the grid wraps past 2^31 - 1: refused as the limit
    return None if M < 2 ** 30 and M * N < 2 ** 31 else f"{M}x{N}: past this kernel's 32-bit rows"


def _races(entry, grid, args=("x", "y", "M", "N"), supports=_int_rows):
    spec = CudaKernel(name="grid-stride", op="reduce_sum", source=str(DATA), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry, grid=grid(M), block=(128,), args=args)],
                      **({"supports": supports} if supports else {}))
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    return [f.message for f in report.findings if f.message.startswith("shared-race")]


def test_a_grid_covering_the_rows_runs_each_block_once_no_race_across_rows():
    assert _races("row_sums", lambda M: (M,)) == []


def test_a_64_bit_counter_covered_by_the_grid_is_clean_at_the_large_shapes_too():
    # `long long row` does not wrap where `int row` does (2^30 + 64 rows of 2: row + gridDim.x passes 2^31 - 1)
    def grid_rows(M, N, dt):
        return None if M < 2 ** 31 else f"{M} rows: more than a grid's 2^31 - 1 blocks"

    assert _races("row_sums_wide", lambda M: (M,), args=("x", "y", Scalar("int64", "M"), "N"), supports=grid_rows) == []
    assert _races("row_sums", lambda M: (M,), supports=grid_rows)  # the 32-bit counter's wrap, as below


def test_a_capped_grid_runs_two_rows_in_a_block_the_race_stays_and_names_the_launch():
    races = _races("row_sums", lambda M: (min(M, 16),))
    assert races and all("WAR hazard" in m for m in races), races
    assert "only across two iterations of a grid-stride loop" in races[0]
    assert "the probe shape 64x" in races[0] and "grid 16x1x1" in races[0] and "its bound M (64)" in races[0], races[0]


def test_rows_past_the_grid_y_limit_keep_the_race_at_that_shape():
    races = _races("row_sums_y", lambda M: (1, min(M, 65535)))
    assert races and "the probe shape 65537x" in races[0] and "grid 1x65535x1" in races[0], races


def test_a_counter_that_wraps_runs_the_loop_again():
    # grid = M at every shape, but supports() takes 2^30 + 64 rows: row + gridDim.x passes 2^31 - 1 and wraps
    races = _races("row_sums", lambda M: (M,), supports=None)
    assert races and "wraps, so the loop runs again" in races[0], races


def test_a_race_within_one_row_stays():
    races = _races("row_sums_unsynced", lambda M: (M,))
    assert any("RAW hazard" in m for m in races), races
    assert not any("only across two iterations" in m for m in races), races


def test_a_bound_no_launch_value_gives_keeps_the_race():
    races = _races("row_sums_counted", lambda M: (M,), args=("x", "y", "x", "N"))
    assert races and not any("only across two iterations" in m for m in races), races


def test_a_grid_that_is_no_tuple_is_the_specs_error_not_an_internal_one():
    # the launch facts read every launch's grid: `grid=M` made `verifier lint` end in an internal TypeError
    from verifier.errors import SpecError

    with pytest.raises(SpecError, match=r"grid 1 is not 1 to 3 whole numbers") as e:
        _races("row_sums", lambda M: 1)
    assert "grid=(M,)" in e.value.fix
