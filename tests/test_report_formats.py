"""Every report format from a live battery run and from the same result saved as JSON; markdown and JUnit
content. The live result comes from a real battery run on a softmax 5% too large and one that leaves
its last three columns unwritten (so value, invariant and unwritten cells FAIL)."""
import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from verifier.declare import registry
from verifier.isolation import check_all
from verifier.results.kernel import KernelReport
from verifier.results.options import Options
from verifier.errors import UsageError
from verifier.results.findings import Finding
from verifier.report import FORMATS, render
from verifier.results.run import Result, merge, sorted_findings
from verifier.results.serialize import from_dict
from verifier.spec import CallableKernel, dtypes

SPEC = textwrap.dedent('''
    import torch
    from verifier.spec import CallableKernel, dtypes

    def too_big(inputs, outputs, params, dt):
        outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1) * 1.05)

    def partial(inputs, outputs, params, dt):
        y = torch.softmax(inputs["x"].float(), -1)
        n = max(1, y.shape[1] - 3)
        outputs["y"][:, :n].copy_(y[:, :n])

    KERNELS = [
        CallableKernel(name="big5", op="softmax", fn=too_big, dtypes=[dtypes("bf16")]),
        CallableKernel(name="partial", op="softmax", fn=partial, dtypes=[dtypes("f32")]),
    ]
''')


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    (root / "bad_spec.py").write_text(SPEC)
    reports = check_all(registry.load([str(root / "bad_spec.py")]), Options(level="quick", device="cpu"))
    return Result(reports=reports, environment={"torch": "2.13.0+cpu", "gpu": None},
                  options={"budget": "quick", "seed": 0, "device": "cpu"}, source_root=str(root))


def _saved(result):
    saved = from_dict(json.loads(render(result, "json")))
    saved.source_root = result.source_root
    return saved


def test_the_live_run_found_the_defects(live):
    big5, partial = live.reports
    assert big5.verdict == "fail" and {f.check for f in big5.findings} >= {"value", "invariant"}
    assert partial.verdict == "fail" and "unwritten" in {f.check for f in partial.findings}


@pytest.mark.parametrize("fmt", FORMATS)
def test_saved_json_renders_exactly_like_the_live_result(live, fmt):
    assert render(_saved(live), fmt) == render(live, fmt)


def test_saved_findings_keep_their_order_without_scores(live):
    data = json.loads(render(live, "json"))
    for k in data["kernels"]:
        for f in k["findings"]:
            del f["score"]  # a result written before scores were saved
    saved = from_dict(data)
    saved.source_root = live.source_root
    assert render(saved, "markdown") == render(live, "markdown")


@pytest.mark.parametrize("bad, where", [
    ([], "expected a JSON object"),
    ({"schema": 3, "kernels": []}, "schema 3"),
    ({"schema": 1}, "missing key 'kernels'"),
    ({"schema": 1, "kernels": [{"name": "k"}]}, "kernels[0]: missing key 'verdict'"),
    ({"schema": 1, "kernels": [{"name": "k", "verdict": "maybe"}]}, "kernels[0].verdict"),
    ({"schema": 1, "kernels": [{"name": "k", "verdict": "fail", "findings": [{"check": "vibes", "message": "m"}]}]},
     "kernels[0].findings[0]"),
    ({"schema": 1, "kernels": [{"name": "k", "verdict": "fail", "findings": [{"check": "racecheck", "message": "m",
                                                                            "line": "42"}]}]},
     "kernels[0].findings[0].line"),
    ({"schema": 1, "kernels": [{"name": "k", "verdict": "pass", "checks": ["f32"]}]}, "kernels[0] is malformed"),
    ({"schema": 1, "kernels": [{"name": "k", "verdict": "pass", "seconds": "slow"}]}, "kernels[0] is malformed"),
])
def test_malformed_saved_results_name_what_is_wrong(bad, where):
    with pytest.raises(UsageError) as e:
        from_dict(bad)
    assert where in str(e.value) and e.value.fix


def test_unknown_format_is_a_usage_error(live):
    with pytest.raises(UsageError, match="unknown format 'pdf'"):
        render(live, "pdf")


# --- markdown --------------------------------------------------------------------------------
def test_markdown_table_has_one_row_per_kernel_and_dtype_with_failing_cells(live):
    md = render(live, "markdown")
    header = next(line for line in md.splitlines() if line.startswith("| kernel |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    row = {}
    for line in md.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            row[(cells[0], cells[1])] = dict(zip(cols, cells))
    assert set(row) == {("`big5`", "bf16"), ("`partial`", "f32")}
    assert row[("`big5`", "bf16")]["value"] == "**FAIL**"
    assert row[("`big5`", "bf16")]["build"] == "skipped"
    assert row[("`partial`", "f32")]["unwritten"] == "**FAIL**"
    assert row[("`partial`", "f32")]["value"] == "pass"


def test_markdown_details_give_case_shape_dtype_message_and_relative_repro(live):
    md = render(live, "markdown")
    assert md.count("<details>") == 2 and md.count("</details>") == 2
    big5 = md.split("<code>big5</code>", 1)[1].split("</details>", 1)[0]
    first = sorted_findings(live.reports[0].findings)[0]
    assert f"case `{first.input}`" in big5 and f"shape `{tuple(first.shape)}`" in big5 and "dtype `bf16`" in big5
    assert first.message in big5
    assert f"verifier check bad_spec.py --kernel big5 --dtype bf16 --case {first.input}" in big5
    assert live.source_root not in md  # the checkout's absolute path never reaches the comment


def _racy_result(tmp_path, message="Race condition: shared write at line 42 read at line 40"):
    src = tmp_path / "kernels" / "cuda"
    src.mkdir(parents=True)
    (src / "softmax.cu").write_text("".join(f"// line {i}\n" if i != 42 else "  smem[tid] = v;  // racy\n"
                                            for i in range(1, 61)))
    (src / "softmax_spec.py").write_text('KERNELS = []\n\n\nK = dict(name="cuda-softmax-s1")\n')
    spec = CallableKernel(name="cuda-softmax-s1", op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")],
                          origin=str(src / "softmax_spec.py"))
    rep = KernelReport(spec=spec, device="cuda")
    rep.add(Finding("racecheck", message, kernel=spec.name, dtype="f32", input="normal_small", shape=(4, 128),
                    file="kernels/cuda/softmax.cu", line=42, repro="verifier check kernels/cuda/softmax_spec.py"))
    rep.add(Finding("value", "y: 3/512 elements over their ULP budget", kernel=spec.name, dtype="f32",
                    input="normal_small", shape=(4, 128)))
    return Result(reports=[rep], source_root=str(tmp_path))


def test_markdown_quotes_the_source_lines_of_a_sanitizer_finding(tmp_path):
    md = render(_racy_result(tmp_path), "markdown")
    block = md.split("```cuda\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert [line[:3] for line in block] == [" 39", " 40", " 41", ">42", " 43", " 44", " 45"]
    assert block[3].endswith("smem[tid] = v;  // racy")
    assert "at `kernels/cuda/softmax.cu:42`" in md


def test_markdown_says_when_the_source_line_is_not_in_the_checkout(tmp_path):
    res = _racy_result(tmp_path)
    (tmp_path / "kernels" / "cuda" / "softmax.cu").write_text("short\n")
    assert "source line kernels/cuda/softmax.cu:42 not readable" in render(res, "markdown")


def test_a_message_holding_a_code_fence_cannot_break_out_of_its_block(tmp_path):
    md = render(_racy_result(tmp_path, message="before\n```\n# injected heading\n````"), "markdown")
    assert "`````\nbefore\n```\n# injected heading\n````\n`````" in md


def test_markdown_cuts_findings_to_fit_a_github_comment(tmp_path):
    res = _racy_result(tmp_path)
    rep = res.reports[0]
    for i in range(200):
        rep.add(Finding("value", f"case {i}: " + "x" * 9000, kernel=rep.spec.name, dtype="f32", input=f"c{i}"))
    md = render(res, "markdown")
    assert len(md) <= 60000
    assert md.count("\n- **") == 5  # 10 per kernel would not fit, 5 do
    assert "197 more finding(s) not shown" in md


# --- junit -----------------------------------------------------------------------------------
def test_junit_has_one_suite_per_kernel_and_one_case_per_cell(live):
    top = ET.fromstring(render(live, "junit").encode())
    assert top.tag == "testsuites"
    suites = {s.get("name"): s for s in top.findall("testsuite")}
    assert set(suites) == {"big5", "partial"}
    for r in live.reports:
        suite = suites[r.spec.name]
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases) == len(r.cells)
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))
        assert int(suite.get("skipped")) == len(suite.findall("testcase/skipped"))
        assert all(c.get("classname") == r.spec.name for c in cases)
    for key in ("tests", "failures", "skipped", "errors"):
        assert int(top.get(key)) == sum(int(s.get(key)) for s in suites.values())
    value = suites["big5"].find("testcase[@name='value[bf16]']")
    assert value.find("properties/property[@name='check']").get("value") == "value"
    fail = value.find("failure")
    n_value = sum(f.check == "value" for f in live.reports[0].findings)
    assert fail.text.count("[value]") == n_value and fail.text.count("repro: verifier check bad_spec.py") == n_value
    assert suites["big5"].find("testcase[@name='build[bf16]']/skipped").get("message") == "not a CUDA source"
    assert suites["partial"].find("testcase[@name='value[f32]']").find("failure") is None


def test_junit_internal_error_and_unprintable_characters(tmp_path):
    res = _racy_result(tmp_path, message="nvcc said \x1b[31merror\x1b[0m\x00")
    res.reports[0].error = "RuntimeError: boom\ntraceback line"
    top = ET.fromstring(render(res, "junit").encode())  # parses despite the escape and NUL characters
    err = top.find("testsuite/testcase[@name='battery']/error")
    assert err.get("message") == "RuntimeError: boom" and top.get("errors") == "1"
    assert "\ufffd[31merror" in top.find("testsuite/testcase[@name='racecheck[f32]']/failure").text


# --- merging check and sanitize results -------------------------------------------------------
def test_merge_keeps_every_finding_and_the_worst_cells(tmp_path, live):
    racy = _racy_result(tmp_path)
    saved = _saved(live)
    both = merge([saved, racy, from_dict(json.loads(render(racy, "json")))])
    names = [r.spec.name for r in both.reports]
    assert names == ["big5", "partial", "cuda-softmax-s1"]
    merged = both.reports[2]
    assert len(merged.findings) == 2  # the saved copy's findings equal the live ones: not repeated
    assert merged.cells[("f32", "racecheck")] == "FAIL"
    assert both.summary()["fail"] == 3
