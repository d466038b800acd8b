"""On a GPU, kernels named by their C++ name (unnamed namespace, nested namespaces, template arguments: the spec
tests/data/entry_names/row_sum_spec.py) are launched and their values checked: each passes `verifier check
--device cuda`, the CUDA launch having found the symbol the build step found (tests/test_entry_names.py is the CPU
side)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

SPEC = Path(__file__).resolve().parent / "data" / "entry_names" / "row_sum_spec.py"


_gpu_reason = gpu_and_nvcc_reason  # tests/gpu_requirements.py


_REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_every_cpp_named_entry_launches_and_passes_its_value_checks(tmp_path):
    env = dict(os.environ, VERIFIER_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(SPEC), "--device", "cuda", "--level",
                          "quick", "--format", "json", "--no-progress"], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    kernels = json.loads(out.stdout)["kernels"]
    assert len(kernels) == 6, kernels
    for k in kernels:
        assert k["verdict"] == "pass" and not k["findings"], k
        assert k["checks"]["f32"]["value"] == "pass", (k["name"], k["checks"])  # launched and judged
