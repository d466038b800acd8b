"""On a GPU, the worked example of docs/specs.md ("Your own op") and the ops with outputs in a dtype of their own
(tests/data/user_ops_quant_spec.py): the correct torch callables and CUDA kernels pass their value checks under the
derived budgets, and every buggy kernel fails, the CUDA ones that only values show (a skipped tail, an L2 norm
without its eps) included (tests/test_user_ops.py is the CPU side)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parents[1]
SPECS = [ROOT / "docs" / "examples" / "your_own_op" / "ops_spec.py", ROOT / "tests" / "data" / "user_ops_quant_spec.py"]


_gpu_reason = gpu_and_nvcc_reason  # tests/gpu_requirements.py


_REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_user_ops_on_the_gpu_correct_kernels_pass_and_buggy_ones_fail(tmp_path):
    env = dict(os.environ, VERIFIER_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "verifier.cli", "check", *map(str, SPECS), "--device", "cuda",
                          "--level", "quick", "--format", "json", "--no-progress"], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    verdicts = {k["name"]: k["verdict"] for k in json.loads(out.stdout)["kernels"]}
    good = {"my-amax-torch", "my-l2norm-torch", "my-amax-cuda", "my-l2norm-cuda", "ptq", "argmax"}
    assert {k for k, v in verdicts.items() if v == "pass"} == good, verdicts
    assert {k for k, v in verdicts.items() if v == "fail"} == set(verdicts) - good, verdicts
