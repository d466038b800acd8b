"""Catalogue cases that did not run are never silent: counted in the text report, listed with --verbose and in JSON."""
import json

from verifier.results.notes import case_not_run, contract, kind
from verifier.report import render
from verifier.results.serialize import from_dict


def _result(verbose):
    from verifier.results.kernel import PASS, KernelReport
    from verifier.results.run import Result
    from verifier.spec import CallableKernel, dtypes

    spec = CallableKernel(name="k", op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")])
    r = KernelReport(spec=spec, device="cpu")
    r.mark("f32", "value", PASS)
    r.notes += [case_not_run("[f32] case vocab_152064 (2x152064) refused by design: N=152064 > 8192"),
                "[sm_90] k_f32: 20 registers, 0 spill bytes, 0 stack bytes, 128 smem bytes",
                contract("contract: nan_inputs=unsupported declared")]
    return Result(reports=[r], environment={}, options={"verbose": verbose})


def test_cases_not_run_are_counted_without_verbose():
    text = render(_result(False), "text")
    assert "note: k: 1 catalogue case(s) not run" in text and "--verbose lists them" in text
    assert "20 registers" not in text
    assert "note: k: nan_inputs=unsupported declared" in text  # contracts: always shown


def test_notes_are_typed_records_not_classified_by_their_words():
    """A note's kind is set where it is made: an info note whose words look like a refused case is not counted."""
    r = _result(False)
    r.reports[0].notes[:] = ["[f32] case x (1x2) refused by design: looks like one", "contract: not one either"]
    text = render(r, "text")
    assert "catalogue case(s) not run" not in text and "note: k:" not in text


def test_verbose_lists_every_note_and_json_keeps_them():
    text = render(_result(True), "text")
    assert "refused by design: N=152064 > 8192" in text and "20 registers" in text
    data = json.loads(render(_result(False), "json"))
    assert len(data["kernels"][0]["notes"]) == 3
    saved = from_dict(data).reports[0].notes
    assert saved == data["kernels"][0]["notes"]
    assert [kind(n) for n in saved] == ["case-not-run", "info", "contract"]  # kinds survive the round trip
    assert render(from_dict(data), "text") == render(_result(False), "text")


def test_merge_keeps_every_note_once():
    """verifier.results.run.merge (tools/pr_report.py joins `check` and `sanitize` results) dropped notes: a case not
    run in one result vanished from the merged report."""
    from verifier.results.run import merge

    a, b = _result(False), _result(False)
    b.reports[0].notes.append(case_not_run("[f32] case n1 (1x1) not run: only in the second result"))
    merged = merge([a, b]).reports[0].notes
    assert merged == a.reports[0].notes + [b.reports[0].notes[-1]]
    assert [kind(n) for n in merged] == ["case-not-run", "info", "contract", "case-not-run"]
    assert merge([a]).reports[0].notes == a.reports[0].notes
