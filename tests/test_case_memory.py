"""Memory (issue 35, item 8): a case's memory is estimated before anything of it is allocated, and a case past what
the machine has is not run, with the case, the estimate and what is available: a skip, never a pass, never the
out-of-memory killer ending the run and a crash blamed on the kernel."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from verifier.battery import check_kernel, memory
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

GOOD = '''
import torch
from verifier.spec import CallableKernel, dtypes

def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

KERNELS = [CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]
'''


def _good(inputs, outputs, params, dt):
    import torch

    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))


def test_the_estimate_counts_inputs_outputs_and_the_float64_judge():
    dt = dtypes("f32")
    small = memory.host_bytes("softmax", dt, 4, 1000, {}, "cpu") - memory.MARGIN_BYTES
    big = memory.host_bytes("softmax", dt, 4, 100_000_000, {}, "cpu") - memory.MARGIN_BYTES
    # per element at least: x drawn in float64, three f32 copies of x and of y, x and y in float64 in the judge
    assert big >= 4e8 * (8 + 3 * 4 + 3 * 4 + 8 + 6 * 8)
    assert big > 30e9 and small < 1e6


def test_a_case_past_the_available_memory_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.setattr(memory, "available_host_bytes", lambda: 2 * 10**9)
    spec = CallableKernel(name="good", op="softmax", fn=_good, dtypes=[dtypes("f32")])
    report = check_kernel(spec, Options(level="quick", device="cpu", case="hypothesis:4x100000000:rng0"))
    assert report.verdict == "skipped" and not report.findings
    reason = report.cells[("f32", "value")].reason
    assert "4x100000000 needs about" in reason and "2.0 GB available (MemAvailable)" in reason
    assert any("hypothesis:4x100000000:rng0" in n for n in map(str, report.notes))


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="MemAvailable is read from Linux's /proc/meminfo")
def test_the_cli_refuses_a_huge_case_before_allocating_it(tmp_path):
    """Before: `--case hypothesis:4x100000000:rng0` grew the process to ~24 GB until the OOM killer ended it; this
    shape (6.4e10 elements, terabytes) is past any machine's memory, and refused in a second or two."""
    (tmp_path / "k_spec.py").write_text(textwrap.dedent(GOOD))
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERIFIER_")}
    p = subprocess.run([sys.executable, "-m", "verifier.cli", "check", "k_spec.py", "--case",
                        "hypothesis:64x1000000000:rng0", "--level", "quick", "--device", "cpu", "--no-progress",
                        "--format", "json"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert p.returncode == 4, p.stderr  # nothing was checked: never a pass
    (k,) = json.loads(p.stdout)["kernels"]
    assert k["verdict"] == "skipped" and not k["findings"]
    assert "64x1000000000 needs about" in p.stderr and "available (MemAvailable)" in p.stderr
