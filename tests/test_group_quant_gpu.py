"""The Triton per-token-group quantizer (kernels/triton/group_quant.py) compiled on a GPU: every variant passes the ci
battery (per-group scales, UE8M0 power-of-two scales, exact int8 ties, strided rows and scales)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_group_quantizer_passes_ci_on_the_gpu(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check", "kernels/triton/group_quant_spec.py", "--level",
                        "ci", "--format", "json", "--output", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=1800)
    assert out.exists(), r.stderr
    doc = json.loads(out.read_text())
    bad = {k["name"]: [f["message"] for f in k["findings"]][:3] for k in doc["kernels"] if k["verdict"] != "pass"}
    assert doc["kernels"] and not bad, bad
