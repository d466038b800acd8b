"""A Triton launcher that launches no Triton kernel (it computes with torch) is that kernel's error, not a pass
(issue 35, item 3): on the CPU in the interpreter, as on a GPU (verifier.launch.triton_capture counts launches)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

# find_spec, not importorskip: importing triton here, at collection, would commit the worker to compiled mode before
# the plugin picks the interpreter for the session's Triton tests
if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

LAUNCHER = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _unused(x_ptr):
    pass


def launch(inputs, outputs, params, dtypes):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1).to(outputs["y"].dtype))
'''
SPEC = '''
import torch
from verifier.spec import CallableKernel, TritonKernel, dtypes

def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

KERNELS = [TritonKernel(name="torch-inside", op="softmax", module="torch_launcher.py", launcher="launch",
                        dtypes=[dtypes("f32")]),
           CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]
'''


def test_a_launcher_computing_with_torch_is_the_kernels_error(tmp_path):
    (tmp_path / "torch_launcher.py").write_text(textwrap.dedent(LAUNCHER))
    (tmp_path / "t_spec.py").write_text(textwrap.dedent(SPEC))
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERIFIER_")}
    p = subprocess.run([sys.executable, "-m", "verifier.cli", "check", "t_spec.py", "--level", "quick", "--device",
                        "cpu", "--no-progress", "--format", "json"], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=120)
    assert p.returncode == 1, p.stderr
    kernels = {k["name"]: k for k in json.loads(p.stdout)["kernels"]}
    assert kernels["good"]["verdict"] == "pass"
    bad = kernels["torch-inside"]
    assert bad["verdict"] == "error"
    assert "launched no Triton kernel" in bad["error"]
