"""pytest plugin under xdist: a kernel that kills its worker costs one test, with its repro line; the kernel's
other tests then run in child processes, so the session never reaches xdist's crashed-worker limit."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from child_sessions import NO_HYPOTHESIS_PLUGIN

REPO = Path(__file__).resolve().parents[1]


def test_a_worker_killing_kernel_costs_one_test_each_and_never_stops_the_session(tmp_path):
    spec = REPO / "tests" / "data" / "reliability" / "deadly_spec.py"
    junit = tmp_path / "junit.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERIFIER_", "PYTEST_XDIST"))}
    cmd = [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", *NO_HYPOTHESIS_PLUGIN, "-q",
           "suites/test_ops.py",
           "--verifier-specs", str(spec), "--verifier-kernels", "dies,fine", "--verifier-budget", "quick",
           "--verifier-device", "cpu", f"--junitxml={junit}", "--max-worker-restart", "1",
           # three tests of each kernel: at most one crash per worker (two), so at least one in a child process
           "-k", "test_softmax and (fully_masked or normal_small or determinism)"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    out = p.stdout + p.stderr
    assert "maximum crashed workers reached" not in out, out[-3000:]
    cases = {f"{c.get('name')}": c for c in ET.parse(junit).getroot().iter("testcase")}
    dies = {n: c for n, c in cases.items() if "[dies-" in n}
    fine = {n: c for n, c in cases.items() if "[fine-" in n}
    assert len(dies) >= 3 and len(fine) == len(dies), sorted(cases)
    for n, c in fine.items():  # the other kernel's tests all ran and passed
        assert c.find("failure") is None and c.find("error") is None, n
    crashed = 0
    for n, c in dies.items():  # every test of the dying kernel is listed, and failed
        bad = c.find("failure") if c.find("failure") is not None else c.find("error")
        assert bad is not None, n
        text = (bad.get("message") or "") + (bad.text or "")
        if "crashed" in text:
            crashed += 1
            assert "verifier check" in text and "--kernel dies" in text, text  # the repro line
            assert "child process" in text, text
    assert 1 <= crashed <= 2, out[-3000:]  # at most one per worker; the rest ran in children
    assert p.returncode == 1, out[-3000:]
