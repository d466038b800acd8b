"""On a GPU, the norm variants' CUDA kernels (kernels/cuda/norm_variants.cu) and Triton kernels compiled: every one
passes its whole ci battery under the ops' budgets (values, invariants, determinism, poison and guards, strided and
unaligned rows); the two CUDA defect twins of row_amax are caught, the fmaxf one on its NaN case and the split one by
racecheck where compute-sanitizer is installed (tests/test_norm_variants.py is the CPU side)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parents[1]
OURS = [ROOT / "kernels" / "cuda" / "norm_variants_spec.py", ROOT / "kernels" / "triton" / "norm_variants_spec.py"]
DEFECTS = ROOT / "kernels" / "defects" / "cuda" / "defects.py"

_gpu_reason = gpu_and_nvcc_reason  # tests/gpu_requirements.py
_REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _check(tmp_path, *args):
    env = dict(os.environ, VERIFIER_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "verifier.cli", "check", *map(str, args), "--device", "cuda",
                          "--format", "json", "--no-progress"], capture_output=True, text=True, env=env, timeout=600)
    return out, (json.loads(out.stdout)["kernels"] if out.stdout.strip().startswith("{") else [])


def test_our_norm_variant_kernels_pass_at_ci_on_the_gpu(tmp_path):
    out, kernels = _check(tmp_path, *OURS, "--level", "ci")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert len(kernels) == 18 and {k["verdict"] for k in kernels} == {"pass"}, [(k["name"], k["verdict"])
                                                                              for k in kernels]


def test_row_amax_fmaxf_drops_nan_and_is_caught(tmp_path):
    out, kernels = _check(tmp_path, DEFECTS, "--kernel", "defect-cuda-row-amax-fmaxf", "--kernel", "cuda-row-amax-split",
                          "--case", "amax_nan_inf_rows", "--level", "ci")
    verdicts = {k["name"]: k for k in kernels}
    assert out.returncode == 1 and verdicts["cuda-row-amax-split"]["verdict"] == "pass", out.stdout[-3000:]
    bad = verdicts["defect-cuda-row-amax-fmaxf"]
    assert bad["verdict"] == "fail" and any(f["check"] == "nan-inf" for f in bad["findings"]), bad


@pytest.mark.sanitizer
@pytest.mark.skipif(shutil.which("compute-sanitizer") is None, reason="needs compute-sanitizer (racecheck)")
def test_split_row_amax_race_is_caught_by_racecheck(tmp_path):
    out, kernels = _check(tmp_path, DEFECTS, "--kernel", "defect-cuda-row-amax-split-race", "--level", "quick",
                          "--sanitize")
    (bad,) = kernels
    assert bad["verdict"] == "fail" and any(f["check"] == "racecheck" for f in bad["findings"]), out.stdout[-3000:]
