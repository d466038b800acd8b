"""The compute-sanitizer driver on a machine without a GPU.

A stand-in ``compute-sanitizer`` (a script written here) answers ``--help`` with the real 2025.3.1 help
text, logs its command line, runs the child process the driver asked it to watch (on the CPU), writes
a given XML file to ``--save`` and exits with a given code. So driver → child → XML → findings runs
end to end; only the GPU instrumentation itself is stood in for. Tests that are about the driver's
judgement alone let the stand-in fake the child's result too (FAKE_CS_RUN_CHILD=0: no torch import).
"""
from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from verifier.declare import registry
from verifier.results.kernel import KernelReport
from verifier.results.options import Options
from verifier.errors import ToolMissing, UsageError
from verifier.sanitizer import runs as D
from verifier.sanitizer.suppressions import parse_entries

REPO = Path(__file__).resolve().parents[1]
CAPTURES = REPO.parent / "shared" / "reference-captures" / "h200-2026-11-30"
needs_captures = pytest.mark.skipif(
    not CAPTURES.is_dir(), reason=f"reference captures not found at {CAPTURES} (the shared/ directory beside the repository)")

FAKE = """\
#!{python}
import json, os, shutil, subprocess, sys, time
argv = sys.argv[1:]
with open(os.environ["FAKE_CS_ARGV"], "a") as fh:
    fh.write(json.dumps(argv) + "\\n")
if argv == ["--help"]:
    sys.stdout.write(open(os.environ["FAKE_CS_HELP"]).read())
    sys.exit(0)
i = argv.index("-m") - 1  # the watched command starts with the python executable
opts, child = argv[:i], argv[i:]
time.sleep(float(os.environ.get("FAKE_CS_SLEEP", "0")))
if os.environ.get("FAKE_CS_RUN_CHILD", "1") == "1":
    subprocess.call(child)
else:  # stand in for the child too: report every requested shape launched
    req = json.load(open(child[-1]))
    json.dump({{"kind": "launched", "status": "ok", "launched": req["shapes"], "error": ""}}, open(req["result"], "w"))
if os.environ.get("FAKE_CS_XML"):
    shutil.copy(os.environ["FAKE_CS_XML"], opts[opts.index("--save") + 1].replace("%%", "%"))
sys.exit(int(os.environ.get("FAKE_CS_EXIT", "0")))
"""

SPEC = """\
import torch
from verifier.spec import CallableKernel, dtypes

def softmax(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

def broken(inputs, outputs, params, dt):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")

KERNELS = [
    CallableKernel(name="fake-softmax", op="softmax", fn=softmax, dtypes=[dtypes("f32")],
                   supports=lambda M, N, dt: None if N != 33 else "no 33"),
    CallableKernel(name="fake-broken", op="softmax", fn=broken, dtypes=[dtypes("f32")]),
]
"""


@pytest.fixture
def fake_cs(tmp_path, monkeypatch):
    """Installs the stand-in; returns a function giving the command lines it was called with."""
    if not CAPTURES.is_dir():
        pytest.skip(f"reference captures not found at {CAPTURES} (the stand-in answers --help with cs_help.txt)")
    exe = tmp_path / "bin" / "compute-sanitizer"
    exe.parent.mkdir()
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv(D.TOOL_ENV, str(exe))
    monkeypatch.setenv("FAKE_CS_HELP", str(CAPTURES / "cs_help.txt"))
    monkeypatch.setenv("FAKE_CS_ARGV", str(log))
    return lambda: [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def specs(tmp_path):
    p = tmp_path / "fake_spec.py"
    p.write_text(SPEC)
    return {k.name: k for k in registry.load([str(p)])}


def _opt(cmd, name):
    return [cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a == name]


# --- options and command line ------------------------------------------------------------------------------
@needs_captures
def test_help_of_2025_3_parses_to_its_options():
    opts = D.parse_help((CAPTURES / "cs_help.txt").read_text())
    for o in ("xml", "save", "print-limit", "error-exitcode", "check-exit-code", "kernel-name", "kernel-name-exclude",
              "padding", "leak-check", "racecheck-report", "show-backtrace", "log-file", "launch-count", "tool"):
        assert o in opts, o
    assert "kernel-regex" not in opts and "initcheck-address-space" not in opts  # gone / never existed


def _cmd(tool, options, kernels=(D.KernelFilter("softmax_s3_n1024_bf16", True),)):
    info = D.ToolInfo(path="/cs", version="x", options=frozenset(options))
    return D.build_command(info, tool, "/o/k.xml", "/o/k.log", list(kernels), ["py", "-m", "verifier.sanitizer.child", "r"])


@needs_captures
@pytest.mark.parametrize("tool", D.TOOLS)
def test_every_mandatory_option_is_on_the_command_line(tool):
    cmd = _cmd(tool, D.parse_help((CAPTURES / "cs_help.txt").read_text()))
    assert cmd[0] == "/cs" and cmd[-4:] == ["py", "-m", "verifier.sanitizer.child", "r"]
    assert _opt(cmd, "--tool") == [tool] and "--xml" in cmd and _opt(cmd, "--save") == ["/o/k.xml"]
    assert _opt(cmd, "--print-limit") == ["0"]
    assert _opt(cmd, "--error-exitcode") == [str(D.ERROR_EXITCODE)]
    assert _opt(cmd, "--check-exit-code") == ["yes"]
    assert _opt(cmd, "--kernel-name") == ["kne=softmax_s3_n1024_bf16"]
    # initcheck instruments torch's kernels too: their writes (torch.zeros' fill) must count
    assert _opt(cmd, "--kernel-name-exclude") == ([] if tool == "initcheck" else ["kns=_ZN2at6native"])
    assert _opt(cmd, "--log-file") == ["/o/k.log"]
    assert _opt(cmd, "--padding") == (["32"] if tool == "memcheck" else [])
    assert _opt(cmd, "--leak-check") == (["full"] if tool == "memcheck" else [])
    assert _opt(cmd, "--racecheck-report") == (["all"] if tool == "racecheck" else [])


def test_options_missing_from_an_older_release_are_not_passed():
    old = {"tool", "xml", "save", "print-limit", "error-exitcode", "kernel-regex", "kernel-regex-exclude"}
    cmd = _cmd("memcheck", old, [D.KernelFilter("softmax_kernel", False)])
    assert _opt(cmd, "--kernel-regex") == ["kns=softmax_kernel"] and _opt(cmd, "--kernel-regex-exclude")
    for absent in ("--padding", "--leak-check", "--check-exit-code", "--kernel-name", "--log-file", "--show-backtrace"):
        assert absent not in cmd
    assert _opt(cmd, "--print-limit") == ["0"] and "--xml" in cmd


def test_percent_in_paths_is_escaped_for_save_and_log():
    info = D.ToolInfo(path="/cs", version="x", options=frozenset({"tool", "xml", "save", "print-limit", "error-exitcode",
                                                                  "log-file"}))
    cmd = D.build_command(info, "racecheck", "/o/100%/a.xml", "/o/100%/a.log", [], ["py"])
    assert _opt(cmd, "--save") == ["/o/100%%/a.xml"] and _opt(cmd, "--log-file") == ["/o/100%%/a.log"]


@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_probe_is_cached_per_binary_and_rejects_a_non_sanitizer(fake_cs, tmp_path, monkeypatch):
    exe = os.environ[D.TOOL_ENV]
    info = D.probe(exe)
    assert info.version == "2025.3.1.0" and "racecheck-report" in info.options
    assert D.probe(exe) is info and sum(c == ["--help"] for c in fake_cs()) == 1
    monkeypatch.setenv("FAKE_CS_HELP", str(tmp_path / "argv.jsonl"))  # 'help' without the options
    os.utime(exe, ns=(time.time_ns(), time.time_ns() + 10**9))  # a new binary: probed again
    with pytest.raises(ToolMissing, match="lacks --tool"):
        D.probe(exe)


def test_missing_compute_sanitizer_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv(D.TOOL_ENV, raising=False)
    monkeypatch.setattr(D, "DEFAULT_CUDA_HOME", str(tmp_path))  # a GPU machine's /usr/local/cuda: not looked in
    with pytest.raises(ToolMissing) as e:
        D.find_tool()
    assert "compute-sanitizer was not found" in e.value.message and D.TOOL_ENV in e.value.fix
    monkeypatch.setenv(D.TOOL_ENV, str(tmp_path / "nope"))
    with pytest.raises(ToolMissing, match="not an executable"):
        D.find_tool()


# --- shapes and filters --------------------------------------------------------------------------------------
def test_tail_shapes_and_cuda_entry_filters():
    s3, s4 = (k for k in registry.load([str(REPO / "kernels/cuda/softmax_spec.py")], ["cuda-softmax-s[34]"]))
    bf16 = next(d for d in s3.dtypes if d.tag == "bf16")
    assert D.tail_shapes(s3, bf16) == [(3, 7), (5, 33), (7, 1029), (2, 772)]
    shapes = D.tail_shapes(s4, bf16)  # 8-wide vectors refuse every tail: fallbacks, still not multiples of 256
    assert shapes and all(s4.check_supported(M, N, bf16) is None and N % 256 for M, N in shapes)
    assert [(f.name, f.exact) for f in D.kernel_filters(s3, bf16, D.tail_shapes(s3, bf16))] == [
        ("softmax_s3_n1024_bf16", True), ("softmax_s3_n2048_bf16", True)]


def test_a_kernel_of_fixed_row_lengths_is_launched_at_its_own_small_cases_not_skipped():
    # FlashInfer's merge state takes head_dim 64..512 only: every tail and fallback length is refused (H100,
    # 2026-12-05: it was skipped by all four tools); its own quick cases give it shapes.
    import dataclasses

    (s3,) = registry.load([str(REPO / "kernels/cuda/softmax_spec.py")], ["cuda-softmax-s3"])
    fixed = dataclasses.replace(s3, supports=lambda M, N, dt: None if N in (128, 256) else f"N={N} not 128 or 256")
    bf16 = next(d for d in fixed.dtypes if d.tag == "bf16")
    shapes = D.tail_shapes(fixed, bf16)
    assert shapes and len(shapes) <= D.MAX_SHAPES
    assert all(N in (128, 256) and M * N <= 1 << 16 for M, N in shapes), shapes
    never = dataclasses.replace(s3, supports=lambda M, N, dt: "refuses everything")
    assert D.tail_shapes(never, bf16) == []  # still said, not run: the caller's Unsupported names the shapes tried


def test_triton_kernels_get_no_include_filter():
    # A name filter missing the launched kernel would give a clean report of nothing checked.
    (tri,) = registry.load([str(REPO / "kernels/triton/spec.py")], ["triton-softmax"])
    assert D.kernel_filters(tri, tri.dtypes[0], [(3, 7)]) == []


# --- driver → child → XML → findings ---------------------------------------------------------------------
@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_whole_flow_with_a_race_record(fake_cs, specs, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CS_XML", str(CAPTURES / "rc_race.xml"))
    monkeypatch.setenv("FAKE_CS_EXIT", str(D.ERROR_EXITCODE))
    run = D.sanitize(specs["fake-softmax"], "f32", "racecheck", keep_dir=tmp_path / "keep", device="cpu")
    assert run.exit_code == D.ERROR_EXITCODE and run.tool == "racecheck"
    assert run.shapes == [(3, 7), (7, 1029), (2, 772)]  # launched by the child; (5, 33) refused by supports
    (f,) = run.findings
    assert (f.check, f.severity, f.kernel, f.dtype, f.line) == ("racecheck", "error", "fake-softmax", "f32", 28)
    assert f.message.startswith("RaceHazard") and "[2048 hazards]" in f.message
    assert "--tool racecheck" in f.repro and f.input == "sanitize[3x7, 7x1029, 2x772]"
    assert Path(run.xml_path) == tmp_path / "keep" / "fake-softmax.f32.racecheck.xml" and Path(run.xml_path).is_file()
    (cmd,) = [c for c in fake_cs() if c != ["--help"]]
    assert cmd == run.command[1:]
    assert "--print-limit" in cmd and "--racecheck-report" in cmd and "--xml" in cmd


@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_clean_run_has_no_findings(fake_cs, specs, monkeypatch):
    monkeypatch.setenv("FAKE_CS_RUN_CHILD", "0")
    monkeypatch.setenv("FAKE_CS_XML", str(CAPTURES / "rc_ok.xml"))
    run = D.sanitize(specs["fake-softmax"], "f32", "memcheck", device="cpu")
    assert run.findings == [] and run.exit_code == 0 and run.xml_path is None
    (cmd,) = [c for c in fake_cs() if c != ["--help"]]
    assert _opt(cmd, "--padding") == ["32"] and _opt(cmd, "--leak-check") == ["full"]


@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_error_exit_code_without_records_fails_the_cell_and_keeps_the_log(fake_cs, specs, monkeypatch):
    # 'errors found' with no record to show is an error of the tool's class (issue #16), never a pass
    monkeypatch.setenv("FAKE_CS_RUN_CHILD", "0")
    monkeypatch.setenv("FAKE_CS_XML", str(CAPTURES / "rc_ok.xml"))
    monkeypatch.setenv("FAKE_CS_EXIT", str(D.ERROR_EXITCODE))
    (f,) = D.sanitize(specs["fake-softmax"], "f32", "synccheck", device="cpu").findings
    assert (f.check, f.severity) == ("synccheck", "error")
    assert "exited 86" in f.message and "unreadable" in f.message and "holds no records" in f.message
    assert "the raw log is" in f.message or "no raw log was kept" in f.message


@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_failed_launch_is_a_crash_finding(fake_cs, specs, monkeypatch):
    monkeypatch.setenv("FAKE_CS_XML", str(CAPTURES / "rc_ok.xml"))
    monkeypatch.setenv("FAKE_CS_EXIT", str(D.ERROR_EXITCODE))
    (f,) = D.sanitize(specs["fake-broken"], "f32", "memcheck", device="cpu").findings
    assert (f.check, f.severity) == ("crash", "error")
    assert "illegal memory access" in f.message


@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_timeout_kills_the_run(fake_cs, specs, monkeypatch):
    monkeypatch.setenv("FAKE_CS_SLEEP", "60")
    t0 = time.monotonic()
    run = D.sanitize(specs["fake-softmax"], "f32", "racecheck", timeout=1, device="cpu")
    assert time.monotonic() - t0 < 20
    (f,) = run.findings
    assert run.exit_code is None and f.check == "timeout" and "within 1 s" in f.message


@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_no_xml_is_a_sanitizer_failure_not_a_finding(fake_cs, specs, monkeypatch):
    monkeypatch.setenv("FAKE_CS_RUN_CHILD", "0")
    monkeypatch.setenv("FAKE_CS_EXIT", "255")
    with pytest.raises(D.SanitizerFailed, match="wrote no XML"):
        D.sanitize(specs["fake-softmax"], "f32", "initcheck", device="cpu")


@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_no_supported_shape_is_unsupported(fake_cs, specs):
    with pytest.raises(D.Unsupported, match="refuses every requested shape"):
        D.sanitize(specs["fake-softmax"], "f32", "racecheck", shapes=[(2, 33)], device="cpu")


@needs_captures  # the stand-in answers --help with the captured cs_help.txt
def test_unknown_tool_and_dtype_are_usage_errors(fake_cs, specs):
    with pytest.raises(UsageError, match="unknown sanitizer tool"):
        D.sanitize(specs["fake-softmax"], "f32", "leakcheck", device="cpu")
    with pytest.raises(UsageError, match="declares no dtype 'bf16'"):
        D.sanitize(specs["fake-softmax"], "bf16", "racecheck", device="cpu")


# --- cells, suppressions, the battery hook -----------------------------------------------------------------
def _cuda_spec(name="cuda-softmax-s3"):
    return registry.load([str(REPO / "kernels/cuda/softmax_spec.py")], [name])[0]


def test_battery_never_calls_the_sanitizer_on_cpu(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the sanitizer must not run on CPU")

    monkeypatch.setattr(D, "sanitize", boom)
    monkeypatch.setattr(D, "_run", boom)
    monkeypatch.setattr(D, "find_tool", lambda: "/cs")  # looked up (to name it if missing), never run
    spec = _cuda_spec()
    for budget, tags in (("quick", ["f32"]), ("ci", ["f32", "f16", "bf16"])):
        report = KernelReport(spec=spec, device="cpu")
        D.battery_hook(spec, Options(device="cpu", level=budget, sanitize=True), report, spec.dtypes)
        assert report.cells == {(t, tool): "skipped(no CUDA GPU: compute-sanitizer needs one)"
                                for t in tags for tool in D.TOOLS}
        assert report.verdict == "skipped" and not report.findings


def test_battery_hook_runs_the_tools_it_is_given(monkeypatch):
    monkeypatch.setattr(D, "find_tool", lambda: "/cs")
    spec = _cuda_spec()
    report = KernelReport(spec=spec, device="cpu")
    D.battery_hook(spec, Options(device="cpu", level="ci", sanitize=True, sanitize_tools=["memcheck"]), report,
                   spec.dtypes)
    assert sorted(report.cells) == [(t, "memcheck") for t in ("bf16", "f16", "f32")]
    with pytest.raises(UsageError, match="'memchek'.* is not a compute-sanitizer tool"):  # refused where it is built
        Options(device="cpu", sanitize=True, sanitize_tools=("memchek",))


def test_callables_are_skipped_with_the_reason(monkeypatch, specs):
    monkeypatch.setattr(D, "sanitize", lambda *a, **k: pytest.fail("called"))
    report = KernelReport(spec=specs["fake-softmax"], device="cuda")
    D.sanitize_kernel(specs["fake-softmax"], report, specs["fake-softmax"].dtypes, device="cuda")
    assert set(report.cells.values()) == {"skipped(compute-sanitizer checks CUDA and Triton kernels; this is a Python callable)"}


@needs_captures
def test_cells_findings_suppressions_and_unused_notes(monkeypatch, tmp_path):
    """Each tool's run: errors fail its cell, warnings and suppressed findings do not; unused entries noted."""
    from verifier.sanitizer.xmlparse import SourceMap, parse, to_findings

    files = {"racecheck": "rc_race.xml", "memcheck": "mc_leak.xml", "synccheck": "sc_div.xml", "initcheck": "rc_ok.xml"}

    def fake_sanitize(spec, dt, tool, **kw):
        recs = parse(str(CAPTURES / files[tool]), tool).records
        fs = to_findings(recs, SourceMap(tmp_path), kernel=spec.name, dtype=dt.tag)
        return D.SanitizerRun(tool, D.ERROR_EXITCODE if recs else 0, None, fs, 1.0, ["cs"], shapes=[(3, 7)])

    monkeypatch.setattr(D, "sanitize", fake_sanitize)
    monkeypatch.setattr(D, "find_tool", lambda: "/cs")
    entries = parse_entries({"suppress": [
        {"tool": "synccheck", "kernel": "cuda-softmax-*", "file": "kern.cu:88", "reason": "probe kernel"},
        {"tool": "initcheck", "kind": "UninitializedGlobalRead", "reason": "stale entry"},
        {"tool": "racecheck", "kernel": "other-kernel", "reason": "not this kernel's"}]}, "test.toml")
    spec = _cuda_spec()
    report = KernelReport(spec=spec, device="cuda")
    bf16 = [d for d in spec.dtypes if d.tag == "bf16"]
    D.sanitize_kernel(spec, report, bf16, device="cuda", suppressions=entries)
    assert report.cells == {("bf16", "racecheck"): "FAIL", ("bf16", "memcheck"): "pass",
                            ("bf16", "synccheck"): "pass", ("bf16", "initcheck"): "pass"}
    assert report.verdict == "fail"
    sync = [f for f in report.findings if f.check == "synccheck"]
    assert [f.severity for f in sync] == ["info"] and sync[0].message.endswith("suppressed: probe kernel")
    assert {f.severity for f in report.findings if f.check == "memcheck"} == {"warning"}  # leaks
    unused = [n for n in report.notes if n.startswith("unused sanitizer suppression")]
    assert len(unused) == 1 and "stale entry" in unused[0]  # the other kernel's entry is not this kernel's to judge
    assert any(n.startswith("[bf16] racecheck: 1.0 s, exit 86, shapes 3x7") for n in report.notes)


# --- the command --------------------------------------------------------------------------------------------
def _cli(argv):
    from verifier.cli.sanitize import add_subparser, run

    p = argparse.ArgumentParser()
    add_subparser(p.add_subparsers(dest="command"))
    return run(p.parse_args(["sanitize"] + argv))


def test_command_on_cpu_reports_skipped_cells_and_exits_4(capsys, monkeypatch):
    monkeypatch.setattr("verifier.gpu.probe.resolve_device", lambda d: "cpu")
    monkeypatch.setattr(D, "find_tool", lambda: "/cs")  # the tool is there: the GPU is what is missing
    code = _cli([str(REPO / "kernels/cuda/softmax_spec.py"), "--kernel", "cuda-softmax-s3", "--tool", "racecheck",
                 "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 4  # nothing was sanitized: never the 0 of a clean run
    (k,) = json.loads(out)["kernels"]
    assert k["verdict"] == "skipped"
    assert {tag: list(c) for tag, c in k["checks"].items()} == {t: ["racecheck"] for t in ("bf16", "f16", "f32")}
    assert "nothing was sanitized" in err and "no CUDA GPU" in err


@pytest.mark.parametrize("argv, message", [
    (["--tool", "leakcheck"], "--tool 'leakcheck' is not a compute-sanitizer tool"),
    (["--timeout", "soon"], "--timeout 'soon' is not a number"),
    (["--timeout", "0"], "must be positive"),
    (["--format", "yaml"], "--format 'yaml' is not a format"),
    (["--dtype", "f8"], "declares no dtype 'f8'"),
    (["--jobs", "0"], "--jobs '0' is not a positive whole number"),
    (["--jobs", "many"], "--jobs 'many' is not a positive whole number"),
])
def test_command_usage_errors(argv, message, monkeypatch):
    monkeypatch.setattr("verifier.gpu.probe.resolve_device", lambda d: "cpu")
    with pytest.raises(UsageError) as e:
        _cli([str(REPO / "kernels/cuda/softmax_spec.py"), "--kernel", "cuda-softmax-s3"] + argv)
    assert message in e.value.message and e.value.fix


def test_jobs_run_tool_runs_at_once_spread_over_gpus_and_record_in_order(capsys, monkeypatch):
    """--jobs N: up to N runs at once across kernels, GPUs taken round robin, cells recorded as if serial."""
    import threading

    lock, state, calls = threading.Lock(), {"now": 0, "most": 0}, []

    def fake_sanitize(spec, dt, tool, *, visible=None, **kw):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            calls.append(visible)
        time.sleep(0.2)  # long enough for the pool to fill (this asserts overlap, not speed)
        with lock:
            state["now"] -= 1
        return D.SanitizerRun(tool, 0, None, [], 2.0, ["cs"], shapes=[(3, 7)])

    monkeypatch.setattr("verifier.gpu.probe.resolve_device", lambda d: "cuda")
    monkeypatch.setattr(D, "sanitize", fake_sanitize)
    monkeypatch.setattr(D, "find_tool", lambda: "/cs")
    monkeypatch.setattr("verifier.cli.sanitize._gpus", lambda: ["0", "1"])
    code = _cli([str(REPO / "kernels/cuda/softmax_spec.py"), "--kernel", "cuda-softmax-s[34]", "--jobs", "4",
                 "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert [k["name"] for k in doc["kernels"]] == ["cuda-softmax-s3", "cuda-softmax-s4"]
    for k in doc["kernels"]:
        assert {tag: c for tag, c in k["checks"].items()} == {t: dict.fromkeys(D.TOOLS, "pass")
                                                               for t in ("f32", "f16", "bf16")}
        assert [n.split(":")[0] for n in k["notes"]] == [f"[{t}] {tool}" for t in ("f32", "f16", "bf16")
                                                         for tool in D.TOOLS]
        assert k["seconds"] == 24.0  # 12 runs of 2 s each: the kernel's tool time, not the overlapped wall
    assert len(calls) == 24 and state["most"] == 4
    assert calls.count("0") == calls.count("1") == 12
    assert doc["options"]["jobs"] == 4 and doc["options"]["gpus"] == ["0", "1"]
    assert "24 tool runs, 2 pass" in err


def test_every_bundled_gpu_kernel_gets_sanitizer_shapes_for_every_dtype():
    """A kernel with no supported small shape is reported skipped, never sanitized: the H200 run of
    2026-11-30 found the x16-packed all-reduce kernels in that state (every fallback N was 8 mod 16)."""
    kernels = registry.load([str(REPO / "kernels/cuda"), str(REPO / "kernels/triton")])
    assert len(kernels) >= 39
    for k in kernels:
        for dt in k.dtypes:
            shapes = D.tail_shapes(k, dt)
            assert shapes, f"{k.name} [{dt.tag}] supports none of the sanitizer shapes"
            assert any(N % 256 for _, N in shapes), f"{k.name} [{dt.tag}]: no shape with a partial last block"


def _live_sleeps(marker: str) -> list:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker in (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc to list processes")
def test_ctrl_c_kills_every_running_tool_run(monkeypatch):
    """Tool runs live in their own sessions, so a terminal's Ctrl-C does not reach them: interrupted,
    `verifier sanitize --jobs` must kill them itself instead of waiting out their timeouts."""
    import signal
    import threading

    from verifier.toolchain.proc import run_killable

    marker = f"{time.time_ns() % 10**9 / 1e8 + 20:.8f}"  # a sleep length (20-30 s) no other process uses
    codes = []

    def slow_sanitize(spec, dt, tool, **kw):
        try:
            code, _ = run_killable(["sleep", marker], 600)
        finally:
            codes.append(code if "code" in locals() else "interrupted")
        return D.SanitizerRun(tool, 0, None, [], 1.0, ["cs"], shapes=[(3, 7)])

    monkeypatch.setattr("verifier.gpu.probe.resolve_device", lambda d: "cuda")
    monkeypatch.setattr(D, "sanitize", slow_sanitize)
    monkeypatch.setattr(D, "find_tool", lambda: "/cs")
    monkeypatch.setattr("verifier.cli.sanitize._gpus", lambda: None)

    def interrupt_when_running():
        deadline = time.monotonic() + 60  # a loaded CI machine starts four processes slowly: interrupting before all
        while time.monotonic() < deadline:  # four run left some never started (codes too short), a flake
            if len(_live_sleeps(f"sleep {marker}")) >= 4:
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C: a real signal wakes the waiting main thread

    # What a terminal's Ctrl-C meets in `verifier`: Python's own handler. In two full warm runs of the suite the
    # signal raised nothing in this xdist worker and the runs were waited out (165 s): set it for the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_when_running, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _cli([str(REPO / "kernels/cuda/softmax_spec.py"), "--kernel", "cuda-softmax-s[34]", "--jobs", "4"])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert _live_sleeps(f"sleep {marker}") == []
    assert len(codes) >= 4 and all(c == -9 for c in codes), codes  # SIGKILLed, not waited out
