"""A kernel whose values were not checked (a CUDA kernel without a GPU: built, resource-checked and linted only) has
its own verdict, ``unchecked``, in every format and in the summary line, never ``pass``; ``--require-values``
(``--verifier-require-values``) makes it fail (issue 35, item 5)."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from verifier import cli
from verifier.report import render
from verifier.results.kernel import KernelReport
from verifier.results.run import Result
from verifier.results.serialize import from_dict, to_dict
from verifier.spec import CallableKernel, dtypes

ROOT = Path(__file__).resolve().parents[1]
NO_GPU = "no CUDA GPU: CUDA kernels are built and resource-checked only"
CUDA_SPEC = ROOT / "kernels" / "defects" / "cuda" / "defects.py"  # its spill kernel builds clean, with 2 warnings


def _spec(tmp_path, name):
    spec_file = tmp_path / "k_spec.py"
    spec_file.write_text(f'KERNELS = [\n    CallableKernel(name="{name}", op="softmax"),\n]\n')
    return CallableKernel(name=name, op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")], origin=str(spec_file))


def _report(tmp_path, name="k", values="skipped"):
    r = KernelReport(spec=_spec(tmp_path, name), device="cpu")
    r.mark("f32", "build", "pass")
    r.mark("f32", "resources", "pass")
    r.mark("f32", "value", f"skipped({NO_GPU})" if values == "skipped" else values)
    return r


@pytest.fixture
def result(tmp_path):
    return Result(reports=[_report(tmp_path)], environment={}, source_root=str(tmp_path))


def test_values_never_checked_is_unchecked_not_pass(tmp_path, result):
    (r,) = result.reports
    assert r.verdict == "unchecked" and r.unchecked_values() == [NO_GPU]
    s = result.summary()
    assert (s["pass"], s["unchecked"], s["skipped"]) == (0, 1, 0)
    # what ran (build, resources) found nothing: exit 0; CI that must check values asks for it
    assert result.exit_code() == 0 and result.exit_code(require_values=True) == 1
    checked = _report(tmp_path, "k2", values="pass")
    assert checked.verdict == "pass" and Result(reports=[checked]).exit_code(require_values=True) == 0


def test_a_kernel_with_no_value_cell_is_not_unchecked(tmp_path):
    r = KernelReport(spec=_spec(tmp_path, "lint-only"), device="cpu")
    r.mark("f32", "static", "pass")  # verifier lint / sanitize reports hold no value cell
    assert r.verdict == "pass"


def test_text_summary_line_counts_unchecked_apart(result):
    text = render(result, "text")
    assert "1 kernels: 0 pass, 1 unchecked (values not checked: no CUDA GPU), 0 fail, 0 error, 0 skipped" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("k "))
    assert row.split()[-1] == "unchecked"


def test_json_verdict_schema_2_and_round_trip(result):
    data = json.loads(render(result, "json"))
    assert data["schema"] == 2
    assert data["kernels"][0]["verdict"] == "unchecked"
    assert data["summary"]["unchecked"] == 1 and data["summary"]["pass"] == 0
    assert "pass_without_values" not in data["summary"]
    assert from_dict(data).reports[0].verdict == "unchecked"


def test_a_schema_1_result_reads_back_unchecked(result):
    old = to_dict(result)
    old["schema"] = 1
    old["kernels"][0]["verdict"] = "pass"  # schema 1 said pass
    old["summary"] = {"kernels": 1, "pass": 1, "fail": 0, "error": 0, "skipped": 0, "findings": 0,
                      "pass_without_values": 1}
    again = from_dict(old)
    assert again.reports[0].verdict == "unchecked" and again.summary()["unchecked"] == 1


def test_markdown_headline_says_values_not_checked(result):
    md = render(result, "markdown")
    headline = md.splitlines()[1]
    assert headline.startswith("### kernel-verifier:") and "1 unchecked (values not checked: no CUDA GPU)" in headline
    assert "**Values not checked**" in md and "| **unchecked** |" in md


def test_junit_skips_it_with_the_reason_never_passes_it(result):
    suite = ET.fromstring(render(result, "junit")).find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["verdict"] == "unchecked"
    values = next(tc for tc in suite.findall("testcase") if tc.get("name") == "values")
    assert values.find("skipped").get("message") == f"values not checked: {NO_GPU}"
    assert int(suite.get("skipped")) >= 2  # value[f32] and the kernel's values test


def test_sarif_notes_it_at_the_declaration_error_with_require_values(result):
    (res,) = json.loads(render(result, "sarif"))["runs"][0]["results"]
    assert res["ruleId"] == "verifier/unchecked" and res["level"] == "note"
    assert "values not checked: " + NO_GPU in res["message"]["text"]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "k_spec.py" and loc["region"]["startLine"] == 2
    result.options["require_values"] = True
    (res,) = json.loads(render(result, "sarif"))["runs"][0]["results"]
    assert res["level"] == "error"


@pytest.fixture
def clean_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("VERIFIER_") and k not in ("VERIFIER_CACHE_DIR", "VERIFIER_PYCACHE"):
            monkeypatch.delenv(k)


def test_cli_cuda_kernel_on_cpu_is_unchecked_and_require_values_fails_it(capsys, clean_env, monkeypatch):
    args = ["check", str(CUDA_SPEC), "--kernel", "defect-spill-undeclared", "--device", "cpu", "--no-progress",
            "--level", "quick"]
    assert cli.main(args) == 0
    out, err = capsys.readouterr()
    if "nvcc" in out and "not found" in out:
        pytest.skip("nvcc not available")
    assert "1 unchecked (values not checked: no CUDA GPU)" in out and " pass, " in err
    assert "verifier: 1 kernels, 0 pass, 1 unchecked (values not checked: no CUDA GPU)" in err
    assert cli.main(args + ["--require-values"]) == 1
    _, err = capsys.readouterr()
    assert "--require-values: the values of 1 kernel(s) were not checked (" + NO_GPU in err and "fix:" in err
    monkeypatch.setenv("VERIFIER_REQUIRE_VALUES", "1")
    assert cli.main(args) == 1
    capsys.readouterr()


def test_plugin_require_values_fails_the_values_tests_it_would_leave_out():
    base = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "suites/test_ops.py",
            "--verifier-specs", "kernels/cuda/softmax_spec.py", "--verifier-kernels", "cuda-softmax-s3",
            "--verifier-device", "cpu", "--verifier-level", "quick",
            "-k", "test_softmax and not shapes and not refusal and not determinism and not build and not static"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    plain = subprocess.run(base, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert plain.returncode == 5, plain.stdout[-2000:]  # nothing generated: the values could only skip here
    strict = subprocess.run(base + ["--verifier-require-values"], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=600)
    assert strict.returncode == 1, strict.stdout[-2000:]
    assert "test_softmax[cuda-softmax-s3-f32-values-not-checked]" in strict.stdout
    assert "values not checked: " + NO_GPU in strict.stdout
