"""`verifier check`: options (flags and VERIFIER_* variables), output formats, exit codes 0 / 1 / 2 / 3."""
import json
import textwrap

import pytest

from verifier import cli

SPEC = """
import torch
from verifier.spec import CallableKernel, dtypes

def small(M, N, dt):
    return None if N <= 2048 else "N > 2048"

def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

def big5(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1) * 1.05)

KERNELS = [CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32"), dtypes("bf16")], supports=small),
           CallableKernel(name="big5", op="softmax", fn=big5, dtypes=[dtypes("f32"), dtypes("bf16")], supports=small)]
"""


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "k_spec.py"
    p.write_text(SPEC)
    return str(p)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in ("BUDGET", "SEED", "DEVICE", "FORMAT", "OUTPUT", "DTYPE", "CASE", "KERNEL", "SANITIZE", "ISOLATE",
              "KERNEL_TIMEOUT"):
        monkeypatch.delenv(f"VERIFIER_{k}", raising=False)


def run(capsys, *argv):
    code = cli.main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


FAST = ("--budget", "quick", "--case", "normal_small", "--device", "cpu")


def test_exit_0_text_report_and_progress(capsys, spec):
    code, out, err = run(capsys, spec, "--kernel", "good", *FAST)
    assert code == 0
    header, rule, *rows = out.splitlines()
    assert header.split()[:2] == ["kernel", "dtype"] and header.split()[-1] == "verdict"
    assert "value" in header and "oob-write" in header and set(rule) == {"-", " "}
    assert rows[0].split()[:2] == ["good", "f32"] and rows[1].split()[:2] == ["good", "bf16"]
    assert "skip[1]: not a CUDA source" in out
    assert "[1/1] good" in err  # progress on stderr, not in the report
    assert err.rstrip().endswith("1 kernels, 1 pass, 0 fail, 0 error, 0 skipped, 0 findings")


def test_exit_1_findings_worst_first_with_repro(capsys, spec):
    code, out, err = run(capsys, spec, *FAST, "--no-progress")
    assert code == 1 and "[1/2]" not in err
    table, findings = out.split("\n== ", 1)
    assert "good " in table and "big5 " in table and "FAIL" in table
    assert findings.startswith("big5 (callable, softmax)")
    entries = [ln for ln in findings.splitlines() if ln.startswith("- [")]
    assert entries[0].startswith("- [value]")  # ULP excess outranks the invariant
    assert "repro: verifier check " + spec + " --kernel big5 --dtype" in findings


def test_json_schema_keys(capsys, spec, tmp_path):
    out_file = tmp_path / "r.json"
    code, out, _ = run(capsys, spec, *FAST, "--format", "json", "--output", str(out_file), "--seed", "5")
    assert code == 1 and out == ""
    data = json.loads(out_file.read_text())
    assert {"schema", "kernels", "summary", "environment", "options"} <= set(data)
    assert set(data["environment"]) >= {"gpu", "driver", "cuda", "torch", "triton", "cupy", "commit"}
    assert data["schema"] == 2
    assert data["summary"] == {"kernels": 2, "pass": 1, "unchecked": 0, "fail": 1, "error": 0, "skipped": 0,
                               "findings": data["summary"]["findings"], "warnings": 0}
    assert data["summary"]["findings"] > 0
    good, big5 = data["kernels"]
    for k in (good, big5):
        assert {"name", "op", "kind", "dtypes", "verdict", "findings"} <= set(k)
    assert (big5["name"], big5["op"], big5["kind"], big5["dtypes"], big5["verdict"]) == \
        ("big5", "softmax", "callable", ["f32", "bf16"], "fail")
    f = big5["findings"][0]
    assert {"check", "severity", "input", "shape", "dtype", "message", "seed", "repro"} <= set(f)
    assert (f["check"], f["input"], f["shape"], f["seed"]) == ("value", "normal_small", [4, 128], 5)
    assert good["checks"]["f32"]["value"] == "pass"


def test_markdown_format(capsys, spec):
    code, out, _ = run(capsys, spec, *FAST, "--format", "markdown", "--no-progress")
    assert code == 1 and "### kernel-verifier:" in out and "1 pass, 1 fail" in out
    # (the layout belongs to verifier/report/markdown.py and its tests; here: the command renders it)
    assert "`big5`" in out and "FAIL" in out and "verifier check " + spec in out


def test_options_from_environment(capsys, spec, monkeypatch):
    monkeypatch.setenv("VERIFIER_FORMAT", "json")
    monkeypatch.setenv("VERIFIER_SEED", "11")
    monkeypatch.setenv("VERIFIER_KERNEL", "big5")
    code, out, _ = run(capsys, spec, *FAST, "--no-progress")
    data = json.loads(out)
    assert code == 1 and [k["name"] for k in data["kernels"]] == ["big5"] and data["options"]["seed"] == 11
    # the command line wins over the environment
    code, out, _ = run(capsys, spec, *FAST, "--no-progress", "--format", "text", "--kernel", "good")
    assert code == 0 and out.startswith("kernel")
    # a bad value names the variable it came from
    monkeypatch.setenv("VERIFIER_BUDGET", "huge")  # the older name of VERIFIER_LEVEL
    code, _, err = run(capsys, spec, "--no-progress")
    assert code == 2 and "VERIFIER_BUDGET 'huge' is not a run level" in err and "quick, ci, thorough" in err
    monkeypatch.setenv("VERIFIER_LEVEL", "huger")  # the new name wins over the old one
    code, _, err = run(capsys, spec, "--no-progress")
    assert code == 2 and "VERIFIER_LEVEL 'huger' is not a run level" in err


@pytest.mark.parametrize("argv, words", [
    (["/nonexistent/dir"], "path /nonexistent/dir does not exist"),
    (["SPEC", "--budget", "huge"], "--budget 'huge' is not a run level"),
    (["SPEC", "--level", "huge"], "--level 'huge' is not a run level"),
    (["SPEC", "--format", "xml"], "--format 'xml' is not a format"),
    (["SPEC", "--device", "tpu"], "--device 'tpu' is not a device"),
    (["SPEC", "--seed", "x"], "--seed 'x' is not an integer"),
    (["SPEC", "--kernel-timeout", "-1"], "is not a positive number of seconds"),
    (["SPEC", "--output", "/nonexistent/dir/r.json"], "not a file in an existing directory"),
    (["SPEC", "--kernel", "nomatch*"], "no kernel matches nomatch*"),
    (["SPEC", "--case", "nope", "--device", "cpu"], "no selected kernel has case nope"),
    (["SPEC", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_exit_2_usage_errors_without_traceback(capsys, spec, argv, words):
    code, out, err = run(capsys, *[spec if a == "SPEC" else a for a in argv])
    assert code == 2, err
    assert words in err and "fix:" in err and "Traceback" not in err and out == ""


def test_exit_2_on_a_spec_that_fails_to_import(capsys, tmp_path):
    p = tmp_path / "broken_spec.py"
    p.write_text("import torch\n\nKERNELS = [undefined_name]\n")
    code, _, err = run(capsys, str(p), "--isolate")
    assert code == 2 and f"{p}:3 failed to import: NameError" in err and "Traceback" not in err


@pytest.mark.parametrize("field, value, words", [
    ("op", '"softmaxx"', "field 'op' is 'softmaxx'"),
    ("dtypes", '["bf16"]', "field 'dtypes' must be a non-empty list of Dtypes"),
    ("supports", '"N <= 1024"', "field 'supports' must be callable"),
])
def test_exit_2_on_a_bad_spec_field_names_field_and_fix(capsys, tmp_path, field, value, words):
    kw = {"op": '"softmax"', "dtypes": '[dtypes("f32")]'}
    kw[field] = value
    args = ", ".join(f"{k}={v}" for k, v in kw.items())
    p = tmp_path / "bad_spec.py"
    p.write_text(textwrap.dedent(f"""
        from verifier.spec import CallableKernel, dtypes
        KERNELS = [CallableKernel(name="k", fn=lambda i, o, p, d: None, {args})]
        """))
    code, _, err = run(capsys, str(p))
    assert code == 2 and str(p) in err and words in err and "fix:" in err


def test_exit_3_on_an_internal_error(capsys, spec, monkeypatch):
    import verifier.battery.values

    def bug(*a, **k):
        raise KeyError("oops")

    monkeypatch.setattr(verifier.battery.values, "evaluate", bug)
    code, out, err = run(capsys, spec, *FAST)
    # A bug met while checking one kernel is that kernel's internal error: the run goes on, exits 3, says so.
    assert code == 3 and "internal error" in err and "KeyError" in err and "bug in kernel-verifier" in err
    assert "Traceback" not in err and "big5" in out


def test_commit_can_be_given_for_a_copied_tree(monkeypatch):
    """On the rented GPU machine the tree arrived with a stale .git (2026-11-30: HEAD read d99ecad-dirty for a
    tree at 9356516); VERIFIER_COMMIT names the commit the copy was made from."""
    from verifier.report import environment as E

    monkeypatch.setenv(E.COMMIT_ENV, "9356516")
    assert E._git_commit() == "9356516"
    monkeypatch.delenv(E.COMMIT_ENV)
    assert E._git_commit() != "9356516"


def test_budget_is_the_older_spelling_of_level(capsys, spec):
    """--budget, Options(budget=...) and VERIFIER_BUDGET still work: the same run as --level."""
    from verifier.errors import UsageError
    from verifier.results.options import Options

    assert Options(budget="quick") == Options(level="quick") and Options(level="thorough").budget == "thorough"
    with pytest.raises(UsageError, match="disagree"):
        Options(level="ci", budget="quick")
    a = run(capsys, spec, "--level", "quick", "--case", "normal_small", "--device", "cpu", "--format", "json")
    b = run(capsys, spec, "--budget", "quick", "--case", "normal_small", "--device", "cpu", "--format", "json")
    strip = lambda out: [{k: v for k, v in e.items() if k != "seconds"} for e in json.loads(out)["kernels"]]  # noqa: E731
    assert a[0] == b[0] and strip(a[1]) == strip(b[1])
