"""Catalogue cases that did not run are never silent: counted in the text report, listed with --verbose and in JSON."""
import json

from verifier.report import render
from verifier.report.model import from_dict


def _result(verbose):
    from verifier.battery import KernelReport
    from verifier.report.model import Result
    from verifier.spec import CallableKernel, dtypes

    spec = CallableKernel(name="k", op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")])
    r = KernelReport(spec=spec, device="cpu")
    r.cells[("f32", "value")] = "pass"
    r.notes += ["[f32] case vocab_152064 (2x152064) refused by design: N=152064 > 8192",
                "[sm_90] k_f32: 20 registers, 0 spill bytes, 0 stack bytes, 128 smem bytes"]
    return Result(reports=[r], environment={}, options={"verbose": verbose})


def test_cases_not_run_are_counted_without_verbose():
    text = render(_result(False), "text")
    assert "note: k: 1 catalogue case(s) not run" in text and "--verbose lists them" in text
    assert "20 registers" not in text


def test_verbose_lists_every_note_and_json_keeps_them():
    text = render(_result(True), "text")
    assert "refused by design: N=152064 > 8192" in text and "20 registers" in text
    data = json.loads(render(_result(False), "json"))
    assert len(data["kernels"][0]["notes"]) == 2
    assert from_dict(data).reports[0].notes == data["kernels"][0]["notes"]
