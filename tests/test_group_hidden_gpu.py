"""On a GPU, the group-over-hidden-dim norms (kernels/triton/group_hidden.py compiled, and their torch compositions):
every kernel passes its whole ci battery (groups=4 and groups=3, strided and unaligned rows, the large-index and
65535-row cases), and both defect twins (kernels/defects/triton/group_hidden_defects.py) are caught compiled as they
are in the interpreter (the CPU side: suites/test_ops.py -k group_, suites/test_detection_matrix.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parents[1]
DEFECTS = ROOT / "kernels" / "defects" / "triton" / "defects.py"
_REASON = gpu_and_nvcc_reason()  # tests/gpu_requirements.py
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _check(tmp_path, *args):
    env = dict(os.environ, VERIFIER_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "verifier.cli", "check", *map(str, args), "--device", "cuda",
                          "--format", "json", "--no-progress"], capture_output=True, text=True, env=env, timeout=1800,
                         cwd=ROOT)
    return out, (json.loads(out.stdout)["kernels"] if out.stdout.strip().startswith("{") else [])


def test_group_hidden_kernels_pass_at_ci_on_the_gpu(tmp_path):
    out, kernels = _check(tmp_path, ROOT / "kernels" / "triton" / "group_hidden_spec.py", "--level", "ci")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert len(kernels) == 4 and {k["verdict"] for k in kernels} == {"pass"}, [(k["name"], k["verdict"])
                                                                             for k in kernels]


def test_group_hidden_torch_compositions_pass_at_ci_on_the_gpu(tmp_path):
    out, kernels = _check(tmp_path, ROOT / "kernels" / "torch" / "spec.py", "--kernel", "torch-group-rms-norm",
                          "--kernel", "torch-group-layer-norm", "--kernel", "torch-group-layer-norm-bias", "--level", "ci")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert len(kernels) == 3 and {k["verdict"] for k in kernels} == {"pass"}, [(k["name"], k["verdict"])
                                                                             for k in kernels]


@pytest.mark.parametrize("defect,case", [("defect-triton-group-layernorm-naive-variance", "ghn_groups_of_18"),
                                         ("defect-triton-group-rmsnorm-row-mask", "ghn_groups_of_18")])
def test_group_hidden_defects_are_caught_compiled(tmp_path, defect, case):
    out, kernels = _check(tmp_path, DEFECTS, "--kernel", defect, "--case", case, "--level", "ci")
    (bad,) = kernels
    assert out.returncode == 1 and bad["verdict"] == "fail", out.stdout[-3000:] + out.stderr[-3000:]
    assert any(f["check"] == "value" for f in bad["findings"]), bad["findings"][:3]
