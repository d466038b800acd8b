"""verifier lint with optional inputs passed as null pointers (issue #37: vLLM, SGLang, FlashInfer, ggml and
TransformerEngine test `if (bias != nullptr)`, `if (!scale) return;`, `w == nullptr ? 1.f : w[i]`): where every
launch the spec makes of an entry passes ``Pointer(None)`` for one, the code under that test never runs, and a
defect only there is not reported (a note says what was left out); where a launch passes a tensor, the same
defect is still an error; a condition that is not a pointer's nullness stays live
(tests/data/lint_null_args/optional_pointers.cu)."""
import re
from pathlib import Path

import pytest

from verifier.lint.step import launch_facts, lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, Pointer, Scalar, Struct, dtypes
from verifier.toolchain.nvcc import nvcc_version

SRC = Path(__file__).resolve().parent / "data" / "lint_null_args" / "optional_pointers.cu"
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
NULL = Pointer(None)


def _lint(entry, args):
    """``args(N)``: the launch's arguments at row length N."""
    spec = CudaKernel(name=entry.replace("_", "-"), op="reduce_sum", source=str(SRC), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch(entry, (M,), (256,), args(N))])
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), ("sm_90",))
    return report


def _one(opt, *more):
    return lambda N: ("x", "y", opt, *more, "M", "N")


def _errors(report) -> list:
    return [f.message for f in report.findings if f.severity == "error"]


def _null_notes(report) -> list:
    return [n for n in report.notes if "in every launch of this entry" in n]


CASES = [  # entry, the class its defect is reported as, the source line of the test of the pointer
    ("residual_offset", "offset-wrap", 23),  # if (residual != nullptr) ... residual[blockIdx.x * N + i]
    ("bias_race", "shared-race", 34),  # if (bias) { t[tid] = ...; ... t[tid + 1] }
    ("weight_select", "offset-wrap", 46),  # weight == nullptr ? 1.f : weight[blockIdx.x * N + i]
    ("scale_early_return", "offset-wrap", 56),  # if (!scale) { ...; return; } ... x[blockIdx.x * N + i]
    ("bias_predicated_store", "shared-race", 94),  # `@p st.shared` with p = bias != 0; a select on bias == 0
]


@pytest.mark.parametrize("entry, cls, line", CASES)
def test_a_defect_only_under_a_null_pointer_test_is_not_reported(entry, cls, line):
    r = _lint(entry, _one(NULL))
    assert not r.findings and r.verdict == "pass", [f.message for f in r.findings]
    (note,) = _null_notes(r)
    assert note.startswith(f"static: {entry}: argument 2 is a null pointer in every launch of this entry"), note
    assert re.search(rf"\(the test at \S*optional_pointers\.cu:{line}; not analysed: ", note), note
    assert "the code that runs only where it is not null was not analysed" in note, note


@pytest.mark.parametrize("entry, cls, line", CASES)
def test_the_same_defect_with_a_tensor_passed_is_an_error(entry, cls, line):
    r = _lint(entry, _one("x"))
    assert any(m.startswith(cls + ":") for m in _errors(r)) and r.verdict == "fail", [f.message for f in r.findings]
    assert not _null_notes(r)


def test_an_entry_launched_with_null_and_with_a_tensor_is_analysed_whole():
    # null at the shorter rows, a tensor at the longer: the union of the launches is live
    r = _lint("residual_offset", lambda N: ("x", "y", NULL if N < 4096 else "x", "M", "N"))
    assert any(m.startswith("offset-wrap:") for m in _errors(r)) and not _null_notes(r), r.notes


def test_the_launch_facts_name_the_pointers_null_in_every_launch():
    spec = CudaKernel(name="two", op="reduce_sum", source=str(SRC), dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("both_offset", (M,), (256,),
                                                           ("x", "y", NULL, NULL if N < 4096 else "x", "M", "N"))])
    assert launch_facts(spec, [dtypes("f32")])["both_offset"].nulls == ((2, 0),)


@pytest.mark.parametrize("entry, flag", [("flag_offset", (Scalar("int32", 0),)),  # if (flag != 0)
                                         ("alias_offset", ())])  # if (residual != x)
def test_a_condition_that_is_not_a_pointer_tested_against_0_stays_live(entry, flag):
    r = _lint(entry, _one(NULL, *flag))
    assert any(m.startswith("offset-wrap:") for m in _errors(r)) and not _null_notes(r), [f.message for f in r.findings]


def test_and_of_two_pointer_tests_is_dead_where_either_is_null():
    r = _lint("both_offset", _one(NULL, "x"))  # bias && residual, bias null
    assert not r.findings and len(_null_notes(r)) == 1, [f.message for f in r.findings]
    assert any(m.startswith("offset-wrap:") for m in _errors(_lint("both_offset", _one("x", "x"))))


def test_or_of_two_pointer_tests_is_dead_only_where_both_are_null():
    # nvcc tests `bias || residual` as (bias | residual) == 0
    assert any(m.startswith("offset-wrap:") for m in _errors(_lint("either_offset", _one(NULL, "x"))))
    r = _lint("either_offset", _one(NULL, NULL))
    assert not r.findings, [f.message for f in r.findings]
    (note,) = _null_notes(r)
    assert "argument 2 and argument 3 are null pointers in every launch" in note, note


@pytest.mark.parametrize("member, dead", [(None, True), ("x", False)])
def test_a_null_member_of_a_struct_argument(member, dead):
    def args(N):
        return (Struct([("ptr", "x"), ("ptr", "y"), ("ptr", member), ("int32", "M"), ("int32", "N")]),)

    r = _lint("struct_residual", args)
    if dead:
        assert not r.findings, [f.message for f in r.findings]
        (note,) = _null_notes(r)
        assert "argument 0 (its member at byte 16) is a null pointer" in note, note
    else:
        assert any(m.startswith("offset-wrap:") for m in _errors(r)) and not _null_notes(r)
