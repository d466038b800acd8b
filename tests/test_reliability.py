"""Reliability (issue #16): a failure never reads as a pass, and one bad kernel never costs the others.

Each test injects one fault a user can meet on a CPU machine (a missing tool, a spec mistake, a kernel that
raises, segfaults, exits or is flaky, unreadable sanitizer XML) and asserts what the user sees."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from child_sessions import NO_HYPOTHESIS_PLUGIN

from verifier import cli
from verifier.declare import registry
from verifier.battery import check_kernel
from verifier.results.kernel import FAIL, PASS, KernelReport, skipped
from verifier.battery.build import triton_resources
from verifier.battery.values import run_case
from verifier.results.options import Options
from verifier.errors import SpecError, UsageError, VerifierError

REPO = Path(__file__).resolve().parents[1]
SANITIZER_DATA = REPO / "tests" / "data" / "sanitizer"
RELIABILITY_DATA = REPO / "tests" / "data" / "reliability"
NOTHING_CHECKED = 4


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in ("BUDGET", "SEED", "DEVICE", "FORMAT", "OUTPUT", "DTYPE", "CASE", "KERNEL", "SANITIZE", "ISOLATE",
              "KERNEL_TIMEOUT", "NVCC", "COMPUTE_SANITIZER"):
        monkeypatch.delenv(f"VERIFIER_{k}", raising=False)


def _spec_file(tmp_path, body: str, name: str = "k_spec.py") -> str:
    p = tmp_path / name
    p.write_text("import os, torch\nfrom verifier.spec import CallableKernel, dtypes\n" + textwrap.dedent(body))
    return str(p)


def _data_spec(tmp_path, name: str) -> str:
    """A copy of tests/data/reliability/NAME (a fresh module per test: spec modules are cached by path)."""
    dst = tmp_path / name
    shutil.copy(RELIABILITY_DATA / name, dst)
    return str(dst)


def _cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _verifier(*argv, env=None, cwd=None, timeout=300):
    """`verifier ARGV` in a fresh process (for faults that end the process)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("VERIFIER_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "verifier.cli", *argv], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=timeout)


GOOD = """
def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))
"""


# --- 1: compute-sanitizer said 'errors found', its XML cannot be read ----------------------------------
def _truncated(tmp_path, source: str, nbytes: int) -> Path:
    """A recorded XML cut after ``nbytes`` bytes (a killed or broken run), never a hand-written one."""
    data = (SANITIZER_DATA / source).read_bytes()[:nbytes]
    p = tmp_path / f"cut{nbytes}_{source}"
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("nbytes", [0, 300])
def test_errors_found_but_xml_unreadable_fails_the_cell(tmp_path, nbytes):
    from verifier.sanitizer import runs as D

    (spec,) = registry.load([_spec_file(tmp_path, GOOD + 'KERNELS = [CallableKernel(name="k", op="softmax", '
                                                          'fn=good, dtypes=[dtypes("f32")])]\n')])
    xml = _truncated(tmp_path, "overread_memcheck.xml", nbytes)
    log = tmp_path / "k.f32.memcheck.log"
    log.write_text("========= COMPUTE-SANITIZER\n")
    findings, _ = D._judge(spec, spec.dtypes[0], "memcheck", D.ERROR_EXITCODE, xml,
                           {"status": "ok", "launched": [[3, 7]]}, "", 300, [(3, 7)], log_path=log)
    errors = [f for f in findings if f.severity == "error"]
    assert errors, findings
    (f,) = errors
    assert f.check == "memcheck" and "unreadable" in f.message and str(log) in f.message
    report = KernelReport(spec=spec, device="cuda")
    for g in findings:
        if g.severity == "error":
            report.add(g)
    report.mark("f32", "memcheck", PASS)
    assert report.cells[("f32", "memcheck")] == "FAIL" and report.verdict == "fail"


def test_recorded_complete_xml_is_not_called_unreadable(tmp_path):
    from verifier.sanitizer import runs as D

    (spec,) = registry.load([_spec_file(tmp_path, GOOD + 'KERNELS = [CallableKernel(name="k", op="softmax", '
                                                          'fn=good, dtypes=[dtypes("f32")])]\n')])
    findings, _ = D._judge(spec, spec.dtypes[0], "memcheck", D.ERROR_EXITCODE, SANITIZER_DATA / "overread_memcheck.xml",
                           {"status": "ok", "launched": [[3, 7]]}, "", 300, [(3, 7)], log_path=tmp_path / "x.log")
    assert findings and all("unreadable" not in f.message for f in findings)
    clean, _ = D._judge(spec, spec.dtypes[0], "memcheck", 0, SANITIZER_DATA / "clean_memcheck.xml",
                        {"status": "ok", "launched": [[3, 7]]}, "", 300, [(3, 7)], log_path=tmp_path / "x.log")
    assert clean == []


# --- 2: a run in which nothing was checked ----------------------------------------------------------------
def test_no_nvcc_nothing_checked_exit_4_names_the_tool_and_fix(capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    code, out, err = _cli(capsys, "check", str(REPO / "kernels/cuda/softmax_spec.py"), "--device", "cpu",
                          "--budget", "quick")
    assert code == NOTHING_CHECKED == cli.EXIT_NOTHING_CHECKED
    assert "nothing was checked" in err
    assert "nvcc" in err and "VERIFIER_NVCC" in err  # the tool and the fix


def test_sanitize_without_compute_sanitizer_names_it_and_exits_4(capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    from verifier.sanitizer import runs

    monkeypatch.setattr(runs, "DEFAULT_CUDA_HOME", "/nonexistent-cuda")  # a GPU machine's toolkit: not found either
    code, out, err = _cli(capsys, "sanitize", str(REPO / "kernels/cuda/softmax_spec.py"), "--kernel", "cuda-softmax-s3")
    assert code == NOTHING_CHECKED
    assert "nothing was sanitized" in err or "nothing was checked" in err
    assert "compute-sanitizer" in err and "VERIFIER_COMPUTE_SANITIZER" in err


def test_partly_checked_run_keeps_its_exit_code(capsys, tmp_path):
    spec = _spec_file(tmp_path, GOOD + 'KERNELS = [CallableKernel(name="good", op="softmax", fn=good, '
                                       'dtypes=[dtypes("f32")])]\n')
    code, out, err = _cli(capsys, "check", spec, "--budget", "quick", "--case", "normal_small", "--device", "cpu")
    assert code == 0 and "nothing was checked" not in err


# --- 3: supports() must return None or a reason ------------------------------------------------------------
def test_supports_returning_a_bool_is_a_spec_error(tmp_path, capsys):
    spec = _spec_file(tmp_path, GOOD + 'KERNELS = [CallableKernel(name="boolsup", op="softmax", fn=good, '
                                       'dtypes=[dtypes("f32")], supports=lambda M, N, dt: N <= 1024)]\n')
    (k,) = registry.load([spec])
    with pytest.raises(SpecError) as e:
        k.check_supported(4, 32, k.dtypes[0])
    msg = str(e.value)
    assert "boolsup" in msg and "supports" in msg and "bool" in msg and "None" in msg and "reason" in msg
    code, out, err = _cli(capsys, "check", spec, "--budget", "quick", "--device", "cpu")
    assert code in (1, 2) and "outside supports (False)" not in out + err and "supports" in out + err


@pytest.mark.parametrize("value", ["", 0, ["N > 1024"]])
def test_supports_other_bad_returns(tmp_path, value):
    spec = _spec_file(tmp_path, GOOD + f'KERNELS = [CallableKernel(name="bad", op="softmax", fn=good, '
                                       f'dtypes=[dtypes("f32")], supports=lambda M, N, dt: {value!r})]\n')
    (k,) = registry.load([spec])
    with pytest.raises(SpecError, match="supports"):
        k.check_supported(4, 32, k.dtypes[0])


# --- 4: a cell passes only if an input ran through its check ---------------------------------------------
VALUE_CHECKS = ("value", "invariant", "nan-inf", "unwritten", "out-of-range-write")


@pytest.mark.parametrize("budget", ["quick", "ci"])
def test_kernel_that_never_ran_has_no_passing_cells(tmp_path, budget):
    spec = _spec_file(tmp_path, """
def wrong_signature(inputs, outputs):
    outputs["y"].zero_()

KERNELS = [CallableKernel(name="wrongsig", op="softmax", fn=wrong_signature, dtypes=[dtypes("f32")],
                          supports=lambda M, N, dt: None if N <= 256 else "N > 256")]
""")
    (k,) = registry.load([spec])
    r = check_kernel(k, Options(level=budget, device="cpu"))
    # A TypeError from calling the user's fn is that kernel's error (#13), blamed on the spec file.
    assert r.verdict == "error" and r.error_kind == "user"
    assert "TypeError" in r.error and "wrong_signature" in r.error
    for check in VALUE_CHECKS + ("determinism",):
        v = r.cells.get(("f32", check))
        assert v != PASS, (check, v)
        assert v is None or v == "FAIL" or v.skipped and "raised" in v.reason, (check, v)


def test_a_kernel_that_ran_on_some_inputs_passes_them(tmp_path):
    spec = _spec_file(tmp_path, """
def picky(inputs, outputs, params, dt):
    if inputs["x"].shape[-1] == 7:
        raise ValueError("no 7")
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

KERNELS = [CallableKernel(name="picky", op="softmax", fn=picky, dtypes=[dtypes("f32")],
                          supports=lambda M, N, dt: None if N <= 256 else "N > 256")]
""")
    (k,) = registry.load([spec])
    r = check_kernel(k, Options(level="quick", device="cpu"))
    # raised on one shape supports() accepts and not on the others: a refusal finding (#13), not a crash
    assert [f.input for f in r.findings if f.check == "refusal"] == ["d7_below_warp"]
    assert not [f for f in r.findings if f.check == "crash"]
    assert r.cells[("f32", "nan-inf")] == PASS  # every other input ran through it


# --- 5: a kernel that kills the process ------------------------------------------------------------------


def test_a_kernel_that_kills_the_process_costs_only_itself(tmp_path):
    spec = _data_spec(tmp_path, "deadly_spec.py")
    p = _verifier("check", spec, "--budget", "quick", "--device", "cpu", "--format", "json", "--no-progress")
    assert p.returncode == 1, p.stderr
    res = {k["name"]: k for k in json.loads(p.stdout)["kernels"]}
    assert res["fine"]["verdict"] == "pass"
    segv = [f for f in res["segv"]["findings"] if f["check"] == "crash"]
    assert segv and "SIGSEGV" in segv[0]["message"] and segv[0]["input"] == "d7_below_warp"
    assert "--isolate" in segv[0]["message"] and "--case d7_below_warp" in segv[0]["repro"]
    (ex,) = [f for f in res["exits"]["findings"] if f["check"] == "crash"]
    assert "exit status 1" in ex["message"] and res["exits"]["verdict"] == "fail"


# --- 7: small things -----------------------------------------------------------------------------------
def test_closed_stdout_does_not_change_the_exit_code(tmp_path):
    spec = _spec_file(tmp_path, GOOD + 'KERNELS = [CallableKernel(name="good", op="softmax", fn=good, '
                                       'dtypes=[dtypes("f32")])]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERIFIER_")}
    p = subprocess.Popen([sys.executable, "-m", "verifier.cli", "check", spec, "--budget", "quick", "--case",
                          "normal_small", "--device", "cpu", "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()  # `verifier check | head -0`: the reader is gone before the report is written
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "internal error" not in err


def test_format_help_lists_every_format(capsys):
    from verifier.report import FORMATS

    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["check", "--help"])
    out = capsys.readouterr().out
    line = " ".join(out.split())
    for fmt in FORMATS:
        start = line.index("--format FORMAT", line.index("options:"))
        assert fmt in line[start:line.index("--output FILE", start)], fmt


def test_duplicate_name_message_gives_both_lines(tmp_path):
    spec = _spec_file(tmp_path, GOOD + """
KERNELS = [
    CallableKernel(name="twin", op="softmax", fn=good, dtypes=[dtypes("f32")]),
    CallableKernel(name="other", op="softmax", fn=good, dtypes=[dtypes("f32")]),
    CallableKernel(name="twin", op="softmax", fn=good, dtypes=[dtypes("bf16")]),
]
""")
    lines = Path(spec).read_text().splitlines()
    first, second = [i + 1 for i, ln in enumerate(lines) if 'name="twin"' in ln]
    with pytest.raises(UsageError) as e:
        registry.load([spec])
    assert f"{spec}:{first}" in str(e.value) and f"{spec}:{second}" in str(e.value)


# --- 8: a flaky kernel is a finding, not an abort --------------------------------------------------------


def test_flaky_kernel_is_a_determinism_finding_not_an_abort(tmp_path, capsys):
    spec = _data_spec(tmp_path, "flaky_spec.py")
    code, out, err = _cli(capsys, "check", spec, "--budget", "thorough", "--device", "cpu", "--format", "json",
                          "--no-progress")
    assert code == 1, err
    (k,) = json.loads(out)["kernels"]
    flaky = [f for f in k["findings"] if f["check"] == "determinism" and f["input"].startswith("hypothesis:")]
    assert flaky, [(f["check"], f["input"]) for f in k["findings"]]
    msg = flaky[0]["message"]
    assert "flaky" in msg and "passed" in msg and "failed" in msg  # both outcomes


def test_flaky_failure_from_hypothesis_becomes_a_finding(tmp_path, monkeypatch):
    """Hypothesis's own verdict (FlakyFailure) is turned into the finding whatever the draw sequence."""
    import hypothesis.errors as he

    spec = _spec_file(tmp_path, GOOD + 'KERNELS = [CallableKernel(name="g", op="softmax", fn=good, '
                                       'dtypes=[dtypes("f32")], supports=lambda M, N, dt: None if N <= 64 else "big")]\n')
    (k,) = registry.load([spec])
    real = run_case
    calls = {"n": 0}

    def sometimes_wrong(spec, dt, case, xs, opts, report=None, **kw):
        report = real(spec, dt, case, xs, opts, report, **kw)
        calls["n"] += case.startswith("hypothesis:")
        if calls["n"] == 1 and case.startswith("hypothesis:"):  # fails once, passes on replay: flaky
            from verifier.results.findings import Finding

            report.add(Finding("value", "injected", kernel=spec.name, dtype=dt.tag, input=case))
        return report

    monkeypatch.setattr("verifier.battery.hypothesis.run_case", sometimes_wrong)
    r = check_kernel(k, Options(level="ci", device="cpu", case=None))
    assert any(f.check == "determinism" and "flaky" in f.message for f in r.findings), r.findings
    assert hasattr(he, "Flaky")


# --- 9: repro lines replay the same input at every budget -----------------------------------------------


@pytest.mark.parametrize("budget", ["quick", "ci", "thorough"])
def test_repro_lines_replay_shape_values_and_budget(tmp_path, capsys, budget):
    spec = _data_spec(tmp_path, "big5_spec.py")
    code, out, _ = _cli(capsys, "check", spec, "--budget", budget, "--device", "cpu", "--format", "json",
                        "--no-progress")
    assert code == 1
    (k,) = json.loads(out)["kernels"]
    value = [f for f in k["findings"] if f["check"] == "value"]
    picked = {f["input"]: f for f in value if f["input"] in ("d7_below_warp", "fully_masked_rows")}
    picked.update({f["input"]: f for f in value if f["input"].startswith("hypothesis:")})
    assert picked
    for f in picked.values():
        argv = shlex.split(f["repro"])
        assert argv[:2] == ["verifier", "check"] and argv[argv.index("--level") + 1] == budget
        code, out, _ = _cli(capsys, *argv[1:], "--format", "json", "--no-progress")
        assert code == 1
        (again,) = json.loads(out)["kernels"]
        same = [g for g in again["findings"] if g["check"] == "value" and g["input"] == f["input"]]
        assert same and same[0]["shape"] == f["shape"] and same[0]["message"] == f["message"]


# --- 10: a Triton resources cell that was skipped stays skipped -----------------------------------------
def test_triton_resources_error_is_not_overwritten_by_pass(monkeypatch):
    from verifier.launch import triton as rt

    (spec,) = registry.load([str(REPO / "kernels/triton/spec.py")], ["triton-softmax"])
    dts = spec.dtypes[:1]

    def broken(*a, **kw):
        raise VerifierError("cannot read the compiled kernel's metadata")

    monkeypatch.setattr(rt, "compiled_resources", broken)
    report = KernelReport(spec=spec, device="cuda")
    triton_resources(spec, Options(device="cuda"), report, dts)
    v = report.cells[(dts[0].tag, "resources")]
    assert v.skipped and "metadata" in v.reason

    def usage(*a, **kw):
        raise UsageError("bad launcher grid")

    monkeypatch.setattr(rt, "compiled_resources", usage)
    with pytest.raises(UsageError):
        triton_resources(spec, Options(device="cuda"), KernelReport(spec=spec, device="cuda"), dts)


def test_a_skipped_cell_is_never_overwritten_by_pass(tmp_path):
    (k,) = registry.load([_spec_file(tmp_path, GOOD + 'KERNELS = [CallableKernel(name="g", op="softmax", '
                                                          'fn=good, dtypes=[dtypes("f32")])]\n')])
    r = KernelReport(spec=k, device="cpu")
    r.mark("f32", "value", skipped("why"))
    r.mark("f32", "value", PASS)
    assert r.cells[("f32", "value")] == "skipped(why)"
    r.mark("f32", "value", FAIL)
    assert r.cells[("f32", "value")] == "FAIL"


# --- 11: bad environment for the pytest plugin; one sanitizer judging path ------------------------------
def test_bad_kernel_timeout_variable_is_a_usage_error_naming_it(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERIFIER_")}
    env["VERIFIER_KERNEL_TIMEOUT"] = "soon"
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", *NO_HYPOTHESIS_PLUGIN,
                        "-q", str(tmp_path / "test_x.py")], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=300)
    text = p.stdout + p.stderr
    assert p.returncode == 4, text  # pytest's usage-error code
    assert "VERIFIER_KERNEL_TIMEOUT" in text and "soon" in text and "Traceback" not in text


def test_plugin_sanitizer_rerun_applies_suppressions(tmp_path):
    """--verifier-sanitize judges through the same path as `verifier sanitize`: suppressions apply."""
    from verifier.sanitizer.verdict import judge_rerun
    from verifier.sanitizer import runs as D

    (spec,) = registry.load([_spec_file(tmp_path, GOOD + 'KERNELS = [CallableKernel(name="k", op="softmax", '
                                                          'fn=good, dtypes=[dtypes("f32")])]\n')])
    (tmp_path / "sanitizer-suppressions.toml").write_text(
        '[[suppress]]\ntool = "memcheck"\nkernel = "k"\nreason = "test: the over-read is into padding we own"\n')
    findings = judge_rerun(spec, spec.dtypes[0], None, "memcheck", D.ERROR_EXITCODE,
                                               SANITIZER_DATA / "overread_memcheck.xml", tmp_path / "k.log", "repro")
    assert findings and all(f.severity != "error" for f in findings)
    assert all("suppressed" in f.message for f in findings)
    cut = _truncated(tmp_path, "overread_memcheck.xml", 300)
    findings = judge_rerun(spec, spec.dtypes[0], None, "memcheck", D.ERROR_EXITCODE, cut,
                                               tmp_path / "k.log", "repro")
    # an unreadable XML is judged the same way too (and suppressions name records, so none can hide it)
    assert any(f.severity == "error" and "unreadable" in f.message for f in findings)


# --- 12: fp8 poisons are NaN where the format has NaN ---------------------------------------------------
@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_poisons_are_nan(fmt):
    import torch

    from verifier.launch import harness

    bits = torch.tensor(list(harness._POISON[fmt]), dtype=torch.uint8)
    values = bits.view(getattr(torch, fmt)).float()
    assert torch.isnan(values).all(), (fmt, values)
    assert len(set(harness._POISON[fmt])) == 2


def test_formats_without_nan_document_the_confirmation_rule():
    from verifier.launch import harness

    for fmt in ("int8", "int32"):
        assert fmt in harness._POISON
    doc = harness.__doc__
    assert "int8" in doc and "both poisons" in doc
