"""Shared memory read where no thread of the block writes (`unwritten-shared`): a full-tile
cub::BlockReduce<float, 1024>::Reduce(v, op) launched with 64 threads folds 30 warps' partials that were never
written (vLLM's dynamic_scaled_int8_quant at hidden_size < 1024). At a multiple of 32 no lane is missing, so no
other check saw it; the valid-count form and a reduction reading only the slots of warps that exist stay clean."""
from pathlib import Path

import pytest

from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain.nvcc import nvcc_version

pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
SRC = Path(__file__).parent / "data" / "lint_unwritten_shared" / "block_max.cu"


def _lint(entry, threads=64):
    spec = CudaKernel(name="block-max", op="row_amax", source=str(SRC), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry, (M,), (threads,), ("x", "y", "N"))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), ("sm_90",))
    return [f.message for f in report.findings]


@pytest.mark.parametrize("entry", ["amax_full_tile", "amax_all_slots"])
def test_partials_of_missing_warps_are_read(entry):
    found = [m for m in _lint(entry) if m.startswith("unwritten-shared")]
    assert found and "block 64x1x1" in found[0] and "no thread of the block writes" in found[0], _lint(entry)


@pytest.mark.parametrize("entry", ["amax_valid_count", "amax_guarded"])
def test_reads_of_written_slots_only_are_clean(entry):
    assert _lint(entry) == []


def test_a_full_block_reads_only_written_slots():
    assert _lint("amax_all_slots", threads=1024) == []
