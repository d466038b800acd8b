"""Child pytest processes of the plugin: the poisoned-context fallback (after a CUDA fault, or for a kernel
that killed an xdist worker, a test runs in a fresh ``pytest NODEID``) and the compute-sanitizer re-runs
(``-TOOL`` items: the test of the same id under ``compute-sanitizer --tool TOOL``, judged by
verifier.sanitizer.verdict, the one judging path of ``verifier sanitize`` too).
"""
from __future__ import annotations

import os
import re
import shlex
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from verifier.errors import ToolMissing, UsageError
from verifier.inputs.cases import PROBE_N
from verifier.launch import runnable_reason
from verifier.plugin import worker_crash
from verifier.plugin.session import NO_SANITIZER_GPU as NO_GPU_SANITIZE
from verifier.plugin.session import CHILD_ENV, STATE, format_findings, repro_command, resolved_device, worker_property
from verifier.results.options import Options, environment_timeout, repro_line
from verifier.sanitizer import runs as driver
from verifier.sanitizer.verdict import judge_rerun
from verifier.toolchain.proc import run_killable

try:  # a bad value is reported by session.validated() as a usage error naming the variable, not at import
    CHILD_TIMEOUT_S = environment_timeout()
except UsageError:
    CHILD_TIMEOUT_S = 600.0


def kernel_item(item):
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "verifier_kernel" in callspec.params and "verifier_dtypes" in callspec.params


def contain_worker_crash(item) -> bool:
    """Under xdist: a kernel that killed a worker runs its tests in child processes (True: this one ran);
    any other kernel test is noted first, so the controller can name it if the worker dies (verifier.plugin.worker_crash)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # not an xdist worker: nothing to contain
        return False
    spec, dt = item.callspec.params["verifier_kernel"], item.callspec.params["verifier_dtypes"]
    if worker_crash.crashed(spec.name):
        if runnable_reason(spec, resolved_device(item.config)) is not None:
            return False  # skips without touching the kernel
        run_in_child(item, why=worker_crash.CHILD_REASON)
        return True
    case = item.callspec.params.get("verifier_case")
    name = case.name if case is not None else next(
        (c for c in ("refusal", "determinism") if item.originalname.endswith("_" + c)), "")
    opts = item.funcargs.get("verifier_options") if hasattr(item, "funcargs") else None
    if opts is None:
        v = item.config._verifier
        opts = Options(level=v["level"], seed=v["seed"], device=resolved_device(item.config))
    worker_crash.note_running(item.nodeid, spec.name, repro_line(spec, opts, dt.tag, name),
                              repro_command(item.config, item.nodeid))
    return False


def child_command(config, nodeid: str, junit: str) -> list:
    """``python -m pytest NODEID`` with this session's verifier options, one process, no xdist."""
    v = config._verifier
    cmd = [sys.executable, "-m", "pytest", nodeid, "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rs",
           f"--rootdir={config.rootpath}", f"--junitxml={junit}", "--verifier-device", v["device"],
           "--verifier-level", v["level"], "--verifier-seed", str(v["seed"])]
    if config.inipath:
        cmd += ["-c", str(config.inipath)]
    # However the parent loaded the plugin (entry point, conftest.py, -p), the child names it: under one name
    # (the entry point's is the module path) a second load is a no-op, and a child without it would reject
    # the --verifier-* options.
    cmd += ["-p", "verifier.pytest_plugin"]
    for p in v["specs"]:
        cmd += ["--verifier-specs", p]
    if v["globs"]:
        cmd += ["--verifier-kernels", ",".join(v["globs"])]
    if v.get("bundled"):
        cmd.append("--verifier-bundled")
    if v.get("strict"):
        cmd.append("--verifier-strict")
    return cmd


def run_child(cmd: list, cwd, timeout: float = CHILD_TIMEOUT_S, extra_env: dict | None = None) -> tuple:
    """(exit code or None on timeout, combined output). Own session, so a timeout kills the whole tree."""
    # Not an xdist worker (though it keeps the worker's pinned CUDA_VISIBLE_DEVICES).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    env.update({CHILD_ENV: "1", **(extra_env or {})})
    return run_killable(cmd, timeout, env=env, cwd=cwd)


def artifact_path(config, nodeid: str, suffix: str) -> Path:
    factory = getattr(config, "_tmp_path_factory", None)  # pytest's; xdist gives each worker its own basetemp
    base = factory.getbasetemp() if factory is not None else Path(os.environ.get("TMPDIR", "/tmp"))
    d = base / "verifier-artifacts"
    d.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^\w.-]+", "_", nodeid)[-100:]
    return d / f"{stem}-{zlib.crc32(nodeid.encode()):08x}{suffix}"


def junit_outcome(path) -> tuple | None:
    """(outcome, message, text, properties) of the one test in a child's junit file, or None."""
    try:
        case = next(ET.parse(path).getroot().iter("testcase"), None)
    except (OSError, ET.ParseError):
        return None
    if case is None:
        return None
    props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    for kind in ("failure", "error", "skipped"):
        el = case.find(kind)
        if el is not None:
            return kind, el.get("message", ""), el.text or "", props
    return "passed", "", "", props


def _tail(text: str, n: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-n:]) or "(no output)"


def run_in_child(item, why: str | None = None):
    """Run one test in a fresh ``pytest NODEID`` process: this one's CUDA context is unusable (or ``why``)."""
    config = item.config
    junit = artifact_path(config, item.nodeid, ".child.xml")
    code, out = run_child(child_command(config, item.nodeid, str(junit)), cwd=config.rootpath)
    item.user_properties.append(("isolated", why or f"child process (this worker's CUDA context is unusable after: "
                                                    f"{STATE.poisoned.splitlines()[0]})"))
    item.user_properties += worker_property()  # the child is not a worker: say whose test it ran
    outcome = junit_outcome(junit)
    if outcome is None:
        pytest.fail(f"the child pytest run of {item.nodeid} gave no result ("
                    f"{'timed out' if code is None else f'exit {code}'}); last output:\n{_tail(out)}\n"
                    f"pytest repro: {repro_command(config, item.nodeid)}", pytrace=False)
    kind, message, text, props = outcome
    item.user_properties.extend(props)
    if kind == "skipped":
        pytest.skip(message)
    if kind != "passed":
        pytest.fail(f"(ran in a child process)\n{text or message}", pytrace=False)


def _sanitizer_shapes(spec, dt, case) -> list:
    if case is not None:
        return [(case.M, case.N)]
    return [(4, n) for n in PROBE_N if spec.check_supported(4, n, dt) is None]


def rerun_target(nodeid: str, tool: str) -> str:
    """'...::test_softmax[k-f32-case-memcheck]' -> '...::test_softmax[k-f32-case]' (the test it re-runs)."""
    suffix = f"-{tool}]"
    if not nodeid.endswith(suffix):
        raise ValueError(f"{nodeid} is not a {tool} re-run item")
    return nodeid[: -len(suffix)] + "]"


def sanitizer_command(config, info, tool: str, nodeid: str, spec, dt, case, xml, log, junit) -> list:
    """compute-sanitizer (options from verifier.sanitizer.runs, filtered to the kernel's entries) around
    a child ``python -m pytest NODEID -p no:xdist``."""
    filters = driver.kernel_filters(spec, dt, _sanitizer_shapes(spec, dt, case))
    return driver.build_command(info, tool, str(xml), str(log), filters, child_command(config, nodeid, str(junit)))


def sanitized_rerun(item, tool: str):
    """Re-run the test of the same id (minus ``-TOOL``) in ``compute-sanitizer --tool TOOL python -m pytest
    NODEID -p no:xdist``; the verdict comes from the XML records (verifier.sanitizer), the child's own
    test outcome is reported too."""
    config = item.config
    spec, dt = item.callspec.params["verifier_kernel"], item.callspec.params["verifier_dtypes"]
    case = item.callspec.params.get("verifier_case")
    item.user_properties += [("check", tool), ("kernel", spec.name), ("dtype", dt.tag)] + worker_property()
    if resolved_device(config) != "cuda":
        pytest.skip(NO_GPU_SANITIZE)
    try:
        info = driver.probe(driver.find_tool())
    except ToolMissing as e:
        pytest.skip(f"compute-sanitizer unavailable: {e.message}")
    base = rerun_target(item.nodeid, tool)
    xml, log = artifact_path(config, item.nodeid, ".xml"), artifact_path(config, item.nodeid, ".log")
    junit = artifact_path(config, item.nodeid, ".child.xml")
    for p in (xml, log, junit):
        p.unlink(missing_ok=True)
    cmd = sanitizer_command(config, info, tool, base, spec, dt, case, xml, log, junit)
    code, out = run_child(cmd, cwd=config.rootpath,
                          extra_env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "VERIFIER_TRITON_MODE": "compiled"})
    repro = " ".join(shlex.quote(c) for c in cmd)
    where = f"\nsanitizer log: {log}\nsanitizer xml: {xml}\nrepro: {repro}"
    if code is None:
        pytest.fail(f"{tool} re-run of {base} did not finish within {CHILD_TIMEOUT_S:g} s{where}", pytrace=False)
    if not xml.is_file():
        pytest.fail(f"compute-sanitizer --tool {tool} wrote no XML (exit {code}); last output:\n{_tail(out)}{where}",
                    pytrace=False)
    outcome = junit_outcome(junit)
    findings = judge_rerun(spec, dt, case, tool, code, xml, log, repro,
                                  launched_ok=outcome is not None and outcome[0] in ("passed", "skipped"))
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        pytest.fail(f"{len(errors)} {tool} finding(s), worst first:\n{format_findings(errors)}{where}", pytrace=False)
    if outcome is None:
        pytest.fail(f"the test gave no result under {tool} (exit {code}); last output:\n{_tail(out)}{where}",
                    pytrace=False)
    if outcome[0] == "skipped":
        pytest.skip(outcome[1])
    if outcome[0] != "passed":
        pytest.fail(f"{tool} found nothing, but the test itself failed under it:\n{outcome[2] or outcome[1]}{where}",
                    pytrace=False)
