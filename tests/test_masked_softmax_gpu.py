"""On a GPU: the CUDA masked softmax kernels (kernels/cuda/masked_softmax_spec.py: scale, mask[M,N] / mask[N],
causal, softcap, ALiBi, sinks) pass the ci battery, and the masked_rows contract on the device: one kernel writing
zeros on fully masked rows passes when it declares zeros, fails (nan-inf) when it declares nan, and passes with a
warning naming masked_rows when it declares nothing (tests/test_softmax_inputs.py is the CPU side)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parents[1]
_REASON = gpu_and_nvcc_reason()  # tests/gpu_requirements.py
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _check(tmp_path, *args):
    env = dict(os.environ, VERIFIER_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "verifier.cli", "check", *args, "--device", "cuda", "--format", "json",
                          "--no-progress"], capture_output=True, text=True, env=env, timeout=600)
    return out, json.loads(out.stdout) if out.stdout.strip().startswith("{") else None


def test_cuda_masked_softmax_kernels_pass_ci(tmp_path):
    out, report = _check(tmp_path, str(ROOT / "kernels" / "cuda" / "masked_softmax_spec.py"), "--level", "ci")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert {k["name"]: k["verdict"] for k in report["kernels"]} == {
        "cuda-masked-softmax": "pass", "cuda-masked-softmax-bcast-softcap": "pass",
        "cuda-masked-softmax-alibi-sinks": "pass"}


def test_masked_rows_contract_on_the_device(tmp_path):
    spec = ROOT / "tests" / "data" / "gpu" / "masked_softmax_contract_spec.py"
    out, report = _check(tmp_path, str(spec), "--level", "ci", "--case", "sm_mask_full_rows")
    assert report is not None, out.stdout[-3000:] + out.stderr[-3000:]
    kernels = {k["name"]: k for k in report["kernels"]}
    assert kernels["zeros-declared-zeros"]["verdict"] == "pass"
    assert kernels["zeros-declared-nan"]["verdict"] == "fail"
    assert any(f["check"] == "nan-inf" for f in kernels["zeros-declared-nan"]["findings"])
    undeclared = kernels["zeros-declared-undeclared"]
    assert undeclared["verdict"] == "pass"
    assert any(f["severity"] == "warning" and "masked_rows" in f["message"] for f in undeclared["findings"]), undeclared
