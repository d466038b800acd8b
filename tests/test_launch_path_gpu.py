"""The driver launch path against the torch path on a GPU (verifier.launch.path): bit-identical outputs of bundled
CUDA kernels (two launches with a workspace, an in-out tensor, int64 labels with an int64 scalar, a split-row
workspace), identical findings in the check child for output-memory defects (an out-of-range write, an unwritten
element) and a crash (illegal address), and a quick check child that never imports torch."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from verifier.launch import path as launch_path
from verifier.gpu.probe import driver_device_count

ROOT = Path(__file__).resolve().parent.parent
GUARD_SPECS = ROOT / "tests" / "data" / "gpu" / "guard_defects_spec.py"


def _gpu_reason():
    if driver_device_count() == 0:
        return "needs an NVIDIA GPU and its driver (libcuda sees no device)"
    if shutil.which("nvcc") is None:
        return "needs nvcc to build the CUDA kernels"
    try:
        import cupy  # noqa: F401
        import torch
    except ImportError as e:
        return f"the torch path to compare with needs torch and CuPy ({e})"
    if not torch.cuda.is_available():
        return "the torch path to compare with needs a CUDA build of torch"
    return None


_REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _kernel(spec_file, name):
    from verifier.declare.registry import load_spec_file

    return next(k for k in load_spec_file(spec_file) if k.name == name)


BUNDLED = [("rmsnorm_spec", "cuda-rmsnorm-n1"),  # two launches sharing a tmp:rstd workspace
           ("rmsnorm_spec", "cuda-rmsnorm-n3"),
           ("fused_add_rmsnorm_spec", "cuda-fused-add-rmsnorm"),  # residual: an in-out tensor
           ("cross_entropy_spec", "cuda-cross-entropy"),  # int64 labels, Scalar('int64') ignore_index
           ("softmax_fast_spec", "cuda-softmax-split")]  # tmp:ms workspace sized from M and N


@pytest.mark.parametrize("spec_file, name", BUNDLED)
def test_bundled_kernels_leave_bit_identical_outputs_on_both_paths(monkeypatch, spec_file, name):
    from verifier.inputs.cases import random_inputs
    from verifier.launch.harness import execute
    from verifier.launch.cuda import run_cuda

    spec = _kernel(ROOT / "kernels" / "cuda" / f"{spec_file}.py", name)
    compared = 0
    for dt in spec.dtypes:
        for M, N in ((7, 1000), (3, 4096), (2, 40000)):
            if spec.check_supported(M, N, dt) is not None:
                continue
            xs = random_inputs(spec, dt, M, N, np.random.default_rng(M * N))
            got = {}
            for mode in ("torch", "driver"):
                monkeypatch.setenv(launch_path.ENV, mode)
                got[mode] = execute(run_cuda, spec, xs, dt, spec.op_params(), "cuda")
            t, d = got["torch"], got["driver"]
            for out in t.outputs:
                assert t.outputs[out].tobytes() == d.outputs[out].tobytes(), (dt.tag, M, N, out)
            assert not t.unwritten and not d.unwritten and not t.guard_hits and not d.guard_hits, (dt.tag, M, N)
            compared += 1
    assert compared >= 3


def _reports(mode, monkeypatch, specs, budget="quick"):
    from verifier.isolation import check_all
    from verifier.results.options import Options

    if mode == "auto":
        monkeypatch.delenv(launch_path.ENV, raising=False)  # the child's default: the driver path
    else:
        monkeypatch.setenv(launch_path.ENV, mode)
    return {r.spec.name: r for r in check_all(specs, Options(level=budget, device="cuda"), isolate=True)}


def _error_name(m) -> str:  # CuPy names a fault by the runtime's name (cudaErrorIllegalAddress), the driver
    return "CUDA_ERROR_" + re.sub(r"(?<!^)(?=[A-Z])", "_", m.group(1)).upper()  # by its own: CUDA_ERROR_ILLEGAL_ADDRESS


def _findings(r):
    """Findings as comparable tuples, the CUDA error's name in the driver API's spelling on both paths."""
    return sorted((f.check, f.severity, f.dtype, f.input, re.sub(r"cudaError(\w+)", _error_name, f.message))
                  for f in r.findings)


def test_the_check_child_finds_the_same_on_both_paths_guards_poison_and_crash(monkeypatch):
    from verifier.declare.registry import load_spec_file

    specs = load_spec_file(GUARD_SPECS) + [_kernel(ROOT / "kernels" / "cuda" / "rmsnorm_spec.py", "cuda-rmsnorm-n3")]
    torch_side = _reports("torch", monkeypatch, specs)
    driver_side = _reports("auto", monkeypatch, specs)
    for name, t in torch_side.items():
        d = driver_side[name]
        assert t.error is None and d.error is None, (name, t.error, d.error)
        assert t.cells == d.cells, name
        assert _findings(t) == _findings(d), name
    checks = {name: {f.check for f in r.findings} for name, r in driver_side.items()}
    assert "out-of-range-write" in checks["gpu-rmsnorm-overrun"] and "unwritten" not in checks["gpu-rmsnorm-overrun"]
    assert any("0 bytes after the end" in f.message for f in driver_side["gpu-rmsnorm-overrun"].findings)
    assert "unwritten" in checks["gpu-rmsnorm-skip-last"]
    assert "out-of-range-write" not in checks["gpu-rmsnorm-skip-last"]
    assert "crash" in checks["gpu-rmsnorm-illegal"]  # (the static lint also sees the store to address 16)
    crash = next(f.message for f in driver_side["gpu-rmsnorm-illegal"].findings if f.check == "crash")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in crash or "illegal memory access" in crash, crash
    assert driver_side["cuda-rmsnorm-n3"].verdict == "pass" and not driver_side["cuda-rmsnorm-n3"].findings


_NO_TORCH = """
import json, sys
from verifier.battery import check_kernel
from verifier.launch.path import prefer_driver
from verifier.results.options import Options
from verifier.declare.registry import load_spec_file
prefer_driver()
spec = [k for k in load_spec_file("kernels/cuda/rmsnorm_spec.py") if k.name == "cuda-rmsnorm-n3"][0]
r = check_kernel(spec, Options(level="quick", device="cuda"))
print(json.dumps([r.verdict, len(r.findings), r.judged, sorted(m for m in ("torch", "cupy", "hypothesis") if m in sys.modules)]))
"""


def test_a_quick_check_of_a_cuda_kernel_runs_every_dtype_without_importing_torch():
    out = subprocess.run([sys.executable, "-c", _NO_TORCH], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    import json

    verdict, n, judged, imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert verdict == "pass" and n == 0, out.stdout
    assert all(judged.get(tag, 0) > 0 for tag in ("f32", "f16", "bf16")), judged  # every dtype ran inputs
    assert imported == [], out.stdout
