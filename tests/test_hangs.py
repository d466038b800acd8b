"""A hanging kernel (issue 35, items 1, 9 and 10): its timeout is enforced in every mode and costs it a **timeout**
finding, nothing else; the run's children die with it (SIGKILL) and SIGTERM cleans up as Ctrl-C does.

Each test runs a small spec in a fresh ``verifier check`` (or pytest) with a timeout of a few seconds."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from verifier.constants import EXIT_FINDINGS, EXIT_TERMINATED
from verifier.declare import registry
from verifier.isolation import check_all
from verifier.results.options import Options

REPO = Path(__file__).resolve().parents[1]
SPEC = """
import time, torch
from verifier.spec import CallableKernel, dtypes

def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

def hangs(inputs, outputs, params, dt):
    while True:
        time.sleep(0.05)

KERNELS = [CallableKernel(name="hangs", op="softmax", fn=hangs, dtypes=[dtypes("f32")]),
           CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]
"""


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "hang_spec.py"
    p.write_text(textwrap.dedent(SPEC))
    return p


def _env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERIFIER_", "PYTEST_XDIST"))}
    env["TMPDIR"] = str(tmp_path / "tmp")  # to see what the run leaves behind
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env.update(extra)
    return env


def _check(spec, tmp_path, *argv, env=None):
    return subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(spec), "--device", "cpu", "--level",
                           "quick", "--no-progress", "--format", "json", *argv], capture_output=True, text=True,
                          cwd=tmp_path, env=env or _env(tmp_path), timeout=60)


@pytest.mark.parametrize("how", ["--kernel-timeout", "VERIFIER_KERNEL_TIMEOUT", "-j 1", "-j 2"])
def test_a_hanging_callable_is_a_timeout_finding_and_the_other_kernel_is_checked(spec, tmp_path, how):
    """Before: the run never ended (the CPU fork had no deadline)."""
    argv, env = [], _env(tmp_path)
    if how == "VERIFIER_KERNEL_TIMEOUT":
        env["VERIFIER_KERNEL_TIMEOUT"] = "3"
    else:
        argv = ["--kernel-timeout", "3"] + (how.split() if how.startswith("-j") else [])
    t0 = time.monotonic()
    p = _check(spec, tmp_path, *argv, env=env)
    assert time.monotonic() - t0 < 30
    assert p.returncode == EXIT_FINDINGS, p.stderr
    kernels = {k["name"]: k for k in json.loads(p.stdout)["kernels"]}
    assert kernels["good"]["verdict"] == "pass"
    (f,) = kernels["hangs"]["findings"]
    assert f["check"] == "timeout" and "within 3 s" in f["message"] and f["input"] == "normal_small"
    assert os.listdir(tmp_path / "tmp") == []


def test_in_process_checks_stop_a_hanging_call(spec):
    """isolate=False (everything in this process): the watchdog interrupts the call at the timeout."""
    specs = registry.load([str(spec)])
    t0 = time.monotonic()
    reports = {r.name: r for r in check_all(specs, Options(level="quick", timeout=2), isolate=False)}
    assert time.monotonic() - t0 < 20
    assert reports["good"].verdict == "pass"
    (f,) = reports["hangs"].findings
    assert f.check == "timeout" and f.dtype == "f32" and "were stopped while checking dtype f32" in f.message
    cells = reports["hangs"].cells
    assert cells[("f32", "value")].skipped and cells[("f32", "determinism")].skipped  # never read as a pass


def test_a_hanging_kernel_fails_its_pytest_test_and_only_it(spec, tmp_path):
    """The plugin runs kernels in the pytest process: the watchdog turns the hang into that test's failure."""
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                        str(REPO / "suites" / "test_ops.py"), "--verifier-specs", str(spec),
                        "--verifier-kernels", "hangs,good",
                        "--verifier-level",
                        "quick", "--verifier-device", "cpu", "-k", "test_softmax and normal_small"],
                       capture_output=True, text=True, cwd=REPO, env=_env(tmp_path, VERIFIER_KERNEL_TIMEOUT="2"),
                       timeout=60)
    assert p.returncode == 1, p.stdout[-3000:]
    assert "1 failed, 1 passed" in p.stdout
    assert "[timeout]" in p.stdout and "test_softmax[hangs-f32-normal_small]" in p.stdout


def _children(pid: int) -> list:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_hanging(spec, tmp_path, *argv):
    """`verifier check` on the hanging kernel, once its checking child has been hanging for a moment."""
    p = subprocess.Popen([sys.executable, "-m", "verifier.cli", "check", str(spec), "--kernel", "hangs", "--device",
                          "cpu", "--level", "quick", "--no-progress", "--kernel-timeout", "60", *argv],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    t0 = time.monotonic()
    while not _children(p.pid) and time.monotonic() - t0 < 20:
        time.sleep(0.05)
    time.sleep(1.5 if not argv else 4.0)  # a spawned child (--isolate) imports torch first
    kids = _children(p.pid)
    assert kids, "no checking child started"
    return p, kids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG are Linux's")
@pytest.mark.parametrize("argv", [(), ("--isolate",)], ids=["fork", "isolate"])
def test_children_die_with_a_killed_verifier(spec, tmp_path, argv):
    """Item 10: a CI job's timeout SIGKILLs `verifier check`; the child checking a hung kernel must not live on."""
    p, kids = _start_hanging(spec, tmp_path, *argv)
    p.kill()
    p.communicate(timeout=10)
    deadline = time.monotonic() + 5
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [k for k in kids if _alive(k)]
    for k in left:  # do not leave them to the next test
        os.kill(k, signal.SIGKILL)
    assert not left, "the checking child outlived its SIGKILLed parent"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_sigterm_cleans_up_and_exits_143(spec, tmp_path):
    """Item 9: SIGTERM to `verifier check` kills its children and leaves no verifier-fork-* folder."""
    p, kids = _start_hanging(spec, tmp_path)
    assert any(n.startswith("verifier-fork-") for n in os.listdir(tmp_path / "tmp"))
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=10)
    assert p.returncode == EXIT_TERMINATED, err
    assert "terminated" in err
    time.sleep(0.5)
    assert not any(_alive(k) for k in kids)
    assert os.listdir(tmp_path / "tmp") == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_a_checking_child_ends_on_sigterm(spec, tmp_path):
    """Item 10: a child does not ignore SIGTERM (nor take the parent's clean-up handler for it): it ends, and the
    parent reports that kernel's crash and goes on."""
    p, kids = _start_hanging(spec, tmp_path)
    for k in kids:
        os.kill(k, signal.SIGTERM)
    out, err = p.communicate(timeout=20)
    assert p.returncode == EXIT_FINDINGS, err
    assert "killed by SIGTERM" in out
    assert not any(_alive(k) for k in kids)
