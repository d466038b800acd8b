"""Python ``and`` / ``or`` between block tensors, run in the interpreter as compiled Triton runs them
(verifier.launch.triton_boolops.compiled_boolops): a FlagGems-style argmax masking with ``(rows < M) and (cols < N)``
is judged on the CPU (before, an interpreter gap: unchecked), and its ``or`` twin, which reads past the row, is a
finding. The kernels: tests/data/boolops_argmax/argmax.py."""
from pathlib import Path

import pytest

from verifier.launch.triton import activate, triton_mode

MODULE = Path(__file__).parent / "data" / "boolops_argmax" / "argmax.py"


@pytest.fixture(scope="module")
def interpreter():
    if triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; the rewrite concerns the interpreter")
    activate("interpreter")


def _check(launcher):
    from verifier.isolation import check_all
    from verifier.results.options import Options
    from verifier.spec import Contracts, TritonKernel, dtypes

    spec = TritonKernel(name=f"boolops-argmax-{launcher}", op="row_argmax", module=str(MODULE), launcher=launcher,
                        dtypes=[dtypes("f32")], contracts=Contracts(nan_inputs="unsupported"))
    # as `verifier check` runs it on the CPU: in a fork, so the twin's reads past the input (its padding rows) that
    # land outside the process's memory are its crash finding, not this test process's death
    (report,) = check_all([spec], Options(level="quick", device="cpu"))
    return report


def test_and_between_block_masks_is_judged_and_passes(interpreter):
    report = _check("launch")
    assert report.verdict == "pass" and not report.findings, [f.message for f in report.findings][:3]
    assert report.cells[("f32", "value")].status == "pass", report.cells[("f32", "value")]
    assert not any("interpreter gap" in str(n) for n in report.notes), report.notes


def test_or_where_and_is_needed_is_a_finding(interpreter):
    report = _check("launch_or")
    assert report.verdict == "fail", (report.verdict, report.error, report.notes)
    # the rows whose reads stay in memory give wrong indices (past N, or the next row's maximum); a read that leaves
    # the process's memory is a crash (SIGSEGV) where it happens; what lies past the row may change between two runs
    # (determinism, seen in CI's clean checkout): either way a finding, never a pass; a read into x's guard band
    # past its last row is also an out-of-range-read (verifier.launch.interpreter_reads)
    checks = {f.check for f in report.findings}
    assert checks & {"value", "crash"} and checks <= {"value", "crash", "determinism", "out-of-range-read"}, \
        report.findings
    assert any("argmax wrong" in f.message or "SIGSEGV" in f.message for f in report.findings), \
        [f.message for f in report.findings][:3]
