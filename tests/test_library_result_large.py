"""The large cases on a CPU for a launcher that copies a library's own result into the output
(``outputs["y"].copy_(lib.rms_norm(x, w, eps))``, how a spec wraps a library's Python function): the library's
allocation of the case's rows is laid out as an output is and only the judged rows are copied
(verifier.launch.host_watch.RowWork), so its 32-bit row offset is caught on the CPU; before, the copy over 2^31
elements refused the case ('not run: needs a GPU')."""
import os

import pytest

from verifier.launch import host_alias
from verifier.launch.triton import activate, triton_mode

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "blind_tri6", "library_result.py")
CASE = "large_index_2pow31"


@pytest.fixture(scope="module")
def interpreter():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; these tests concern the interpreter")
    if not host_alias.supported():
        pytest.skip(host_alias.unsupported_reason())
    activate("interpreter")


def _check(launcher, op="rmsnorm"):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import Contracts, TritonKernel, dtypes, max_row

    spec = TritonKernel(name=f"lib-{op}-{launcher}", op=op, module=HERE, launcher=launcher, dtypes=[dtypes("f32")],
                        supports=max_row(16384), contracts=Contracts(layout="contiguous"))
    report = check_kernel(spec, Options(level="ci", device="cpu", case=CASE))
    not_run = [n for n in report.notes if f"case {CASE}" in n and "not run" in n]
    return report, not_run


def test_a_library_results_32_bit_row_offset_is_caught_on_the_cpu(interpreter):
    bad, not_run = _check("narrow")
    assert not not_run, not_run
    unwritten = [f for f in bad.findings if f.check == "unwritten"]
    assert unwritten and "first in row 131072" in unwritten[0].message, [f.message for f in bad.findings][:3]


@pytest.mark.parametrize("launcher", ["wide", "wide_4d"])
def test_a_library_result_with_64_bit_offsets_passes_the_large_case(interpreter, launcher):
    good, not_run = _check(launcher)
    assert not not_run, not_run
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings][:3]


def test_an_in_out_tensor_copied_from_a_library_result_runs_the_large_case(interpreter):
    """fused_add_rmsnorm: the library returns a new residual; the rows no program wrote leave the in-out tensor's
    input (not the allocation's poison), so the programs owning the rows are established and the case runs."""
    bad, not_run = _check("add_narrow", "fused_add_rmsnorm")
    assert not not_run, not_run
    assert any(f.check == "unwritten" for f in bad.findings), [f.message for f in bad.findings][:3]
    good, not_run = _check("add_wide", "fused_add_rmsnorm")
    assert not not_run and good.verdict == "pass" and not good.findings, (not_run, [f.message for f in good.findings])
