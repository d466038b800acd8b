"""tools/pr_report.py: saved JSON results in, markdown / SARIF / JUnit out; bad input is exit 2 with a fix."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verifier.results.cells import Cell
from verifier.results.kernel import KernelReport
from verifier.results.findings import Finding
from verifier.report import render
from verifier.results.run import Result
from verifier.spec import CallableKernel, dtypes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import pr_report  # noqa: E402

SPEC = textwrap.dedent('''
    from verifier.spec import CallableKernel, dtypes

    def fn(inputs, outputs, params, dt):
        pass

    KERNELS = [CallableKernel(name="good", op="softmax", fn=fn, dtypes=[dtypes("f32")]),
               CallableKernel(name="racy", op="softmax", fn=fn, dtypes=[dtypes("f32")])]
''')


def _result(root: Path) -> Result:
    (root / "kernels").mkdir(exist_ok=True)
    spec_file = root / "kernels" / "k_spec.py"
    spec_file.write_text(SPEC)
    (root / "kernels" / "k.cu").write_text("".join(f"int line{i};\n" for i in range(1, 21)))
    reports = []
    for name in ("good", "racy"):
        spec = CallableKernel(name=name, op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")],
                              origin=str(spec_file))
        rep = KernelReport(spec=spec, device="cuda")
        rep.mark("f32", "value", "pass")
        if name == "racy":
            rep.add(Finding("racecheck", "Race condition on __shared__ memory", kernel=name, dtype="f32",
                            input="normal_small", shape=(4, 128), file="kernels/k.cu", line=10,
                            repro=f"verifier check {spec_file} --kernel racy --dtype f32 --case normal_small"))
        reports.append(rep)
    return Result(reports=reports, environment={"gpu": "H200"}, options={"budget": "ci"}, source_root=str(root))


@pytest.fixture
def saved(tmp_path):
    live = _result(tmp_path)
    path = tmp_path / "check.json"
    path.write_text(render(live, "json"))
    return live, path


@pytest.mark.parametrize("fmt", ["markdown", "sarif", "junit", "text"])
def test_renders_a_saved_result_like_the_live_one(saved, tmp_path, fmt):
    live, path = saved
    out = tmp_path / f"report.{fmt}"
    assert pr_report.main(["--input", str(path), "--format", fmt, "--output", str(out), "--root", str(tmp_path)]) == 0
    assert out.read_text() == render(live, fmt)


def test_markdown_to_stdout_quotes_the_racing_line(saved, tmp_path, capsys):
    _, path = saved
    assert pr_report.main(["--input", str(path), "--root", str(tmp_path)]) == 0
    md = capsys.readouterr().out
    assert ">10  int line10;" in md
    assert "verifier check kernels/k_spec.py --kernel racy" in md


def test_check_and_sanitize_results_merge_into_one_report(saved, tmp_path, capsys):
    _, path = saved
    data = json.loads(path.read_text())
    good, racy = data["kernels"]
    # A sanitize run of the same kernels: memcheck fails 'good', racecheck fails 'racy' again.
    good.update(verdict="fail", checks={"f32": {"memcheck": "FAIL", "racecheck": "pass"}},
                findings=[{"check": "memcheck", "message": "Invalid __global__ read", "dtype": "f32",
                           "file": "kernels/k.cu", "line": 3}])
    racy.update(checks={"f32": {"racecheck": "FAIL"}})  # its finding is identical to the first result's
    second = tmp_path / "sanitize.json"
    second.write_text(json.dumps(data))
    assert pr_report.main(["--input", str(path), "--input", str(second), "--format", "json", "--root",
                           str(tmp_path)]) == 0
    merged = {k["name"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert list(merged) == ["good", "racy"]
    assert merged["good"]["verdict"] == "fail" and [f["check"] for f in merged["good"]["findings"]] == ["memcheck"]
    assert merged["good"]["checks"]["f32"] == {"value": "pass", "racecheck": "pass", "memcheck": "FAIL"}
    assert merged["racy"]["checks"]["f32"] == {"value": "pass", "racecheck": "FAIL"}
    assert len(merged["racy"]["findings"]) == 1  # the same finding in both results is reported once


def test_fail_on_findings_sets_the_exit_code(saved, tmp_path):
    _, path = saved
    assert pr_report.main(["--input", str(path), "--output", str(tmp_path / "x"), "--fail-on-findings"]) == 1


def test_require_values_fails_a_saved_unchecked_kernel(tmp_path):
    live = _result(tmp_path)
    live.reports = live.reports[:1]  # good
    live.reports[0].mark("f32", "build", "pass")  # built; its values never checked
    live.reports[0].cells[("f32", "value")] = Cell.parse("skipped(no CUDA GPU: CUDA kernels are built and "
                                                         "resource-checked only)")
    path = tmp_path / "check.json"
    path.write_text(render(live, "json"))
    args = ["--input", str(path), "--format", "sarif", "--output", str(tmp_path / "r.sarif"), "--fail-on-findings"]
    assert pr_report.main(args) == 0
    assert pr_report.main(args + ["--require-values"]) == 1
    (res,) = json.loads((tmp_path / "r.sarif").read_text())["runs"][0]["results"]
    assert res["ruleId"] == "verifier/unchecked" and res["level"] == "error"


@pytest.mark.parametrize("content, message", [
    (None, "cannot read --input"),
    ("{not json", "is not JSON (line 1, column 2"),
    ('{"schema": 1, "kernels": [{"name": "k"}]}', "kernels[0]: missing key 'verdict'"),
])
def test_bad_input_is_exit_2_with_a_fix(tmp_path, capsys, content, message):
    path = tmp_path / "in.json"
    if content is not None:
        path.write_text(content)
    assert pr_report.main(["--input", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "fix:" in err


@pytest.mark.parametrize("argv, message", [
    ([], "--input"),
    (["--input", "x.json", "--format", "pdf"], "invalid choice: 'pdf'"),
])
def test_bad_options_are_exit_2(capsys, argv, message):
    assert pr_report.main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_root_and_unwritable_output_are_exit_2(saved, tmp_path, capsys):
    _, path = saved
    assert pr_report.main(["--input", str(path), "--root", str(tmp_path / "nope")]) == 2
    assert pr_report.main(["--input", str(path), "--output", str(tmp_path / "no" / "dir" / "x.md")]) == 2
    err = capsys.readouterr().err
    assert "is not a directory" in err and "cannot write --output" in err


def test_changed_since_reports_only_the_kernels_touched(saved, tmp_path, capsys, monkeypatch):
    _, path = saved
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", "kernels"], ["commit", "-qm", "base"], ["tag", "base"]):
        subprocess.run(["git", *args], cwd=tmp_path, env=env, check=True, capture_output=True)
    monkeypatch.chdir(tmp_path)
    argv = ["--input", str(path), "--format", "json", "--changed-since", "base"]
    assert pr_report.main(argv) == 0
    assert json.loads(capsys.readouterr().out)["kernels"] == []  # nothing changed since base
    (tmp_path / "kernels" / "k_spec.py").write_text(SPEC + "# edited\n")
    assert pr_report.main(argv) == 0
    assert [k["name"] for k in json.loads(capsys.readouterr().out)["kernels"]] == ["good", "racy"]


def test_runs_as_a_script():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "pr_report.py"), "--input", "/nonexistent.json"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and "cannot read --input /nonexistent.json" in out.stderr


H200_SANITIZE = ROOT / "docs" / "gpu-runs" / "2026-11-30-sanitize"


def test_the_recorded_h200_sanitize_run_renders_in_every_format(tmp_path, capsys):
    """The JSON `verifier sanitize` wrote on the H200 (one file per tool, plus the re-run of the three
    x16 all-reduce kernels the first run could not shape) merges into one clean report of 39 kernels."""
    files = sorted(H200_SANITIZE.glob("sanitize_*.json"))
    assert len(files) == 8
    args = [a for f in files for a in ("--input", str(f))]
    assert pr_report.main(args + ["--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "39 kernels, 39 pass, 0 fail, 0 error, 0 skipped; 0 findings" in md
    assert "| kernel | dtype | racecheck | memcheck | synccheck | initcheck | verdict |" in md
    assert "| `cuda-allreduce-i8x16-i32acc` | i8toi32-i32acc | pass | pass | pass | pass | pass |" in md
    assert pr_report.main(args + ["--format", "sarif", "--output", str(tmp_path / "r.sarif")]) == 0
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    assert sarif["runs"][0]["results"] == []
    assert pr_report.main(args + ["--format", "junit", "--output", str(tmp_path / "r.xml")]) == 0
    junit = (tmp_path / "r.xml").read_text()
    assert 'failures="0"' in junit and "cuda-softmax-s3" in junit
