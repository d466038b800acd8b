"""The one CUDA launch path on a GPU (verifier.launch.cuda): the runner on torch tensors, on a torch stream, and on
driver buffers through the harness leaves bit-identical outputs for bundled kernels (two launches with a workspace,
an in-out tensor, int64 labels with an int64 scalar, a split-row workspace, the sm_90 cluster kernel); the check
child finds an out-of-range write, an unwritten element and a crash; a fault is the same error on both kinds of
memory; a quick check child never imports torch; the pytest plugin's process, which holds torch, uses driver
buffers too."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
GUARD_SPECS = ROOT / "tests" / "data" / "gpu" / "guard_defects_spec.py"


_gpu_reason = gpu_and_nvcc_reason  # tests/gpu_requirements.py


def _torch_reason():
    try:
        import torch
    except ImportError as e:
        return f"the torch-tensor side needs torch ({e})"
    if not torch.cuda.is_available():
        return f"the torch-tensor side needs a CUDA build of torch (this is {torch.__version__})"
    return None


_REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]
_TORCH_REASON = _torch_reason() if _REASON is None else None  # torch is imported only where a GPU is
needs_torch = pytest.mark.skipif(_TORCH_REASON is not None, reason=_TORCH_REASON or "")


def _kernel(spec_file, name):
    from verifier.declare.registry import load_spec_file

    return next(k for k in load_spec_file(spec_file) if k.name == name)


BUNDLED = [("rmsnorm_spec", "cuda-rmsnorm-n1"),  # two launches sharing an rstd workspace
           ("rmsnorm_spec", "cuda-rmsnorm-n3"),
           ("fused_add_rmsnorm_spec", "cuda-fused-add-rmsnorm"),  # residual: an in-out tensor
           ("cross_entropy_spec", "cuda-cross-entropy"),  # int64 labels, Scalar('int64') ignore_index
           ("softmax_fast_spec", "cuda-softmax-split"),  # split rows: several launches, a workspace sized from M, N
           ("softmax_fast_spec", "cuda-softmax-cluster")]  # thread-block clusters fixed at compile time (sm_90)


def _on_torch(spec, xs, dt, stream):
    """The runner on torch tensors made from the same inputs, on ``stream``; name -> bits of each output."""
    import torch

    from verifier.dtypes import from_numpy, torch_dtype
    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import _bits, _out_dtype
    from verifier.ops import get_op

    op = get_op(spec.op)
    M, N = xs["x"].shape
    inputs = {k: from_numpy(v, "cuda") for k, v in xs.items()}
    outputs = {n: inputs[n] if n in op.inouts else
               torch.full(op.shape_of(n, M, N), float("nan"), device="cuda").to(torch_dtype(_out_dtype(n, op, dt)))
               for n in op.outputs}
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        run_cuda(spec, inputs, outputs, spec.op_params(), dt, "cuda")
    stream.synchronize()
    return {n: _bits(t) for n, t in outputs.items()}


@needs_torch
@pytest.mark.parametrize("spec_file, name", BUNDLED)
def test_torch_tensors_on_a_torch_stream_and_driver_buffers_leave_bit_identical_outputs(spec_file, name):
    import torch

    from verifier.inputs.cases import random_inputs
    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import execute

    spec = _kernel(ROOT / "kernels" / "cuda" / f"{spec_file}.py", name)
    stream = torch.cuda.Stream()  # not the default stream: the runner must follow torch's current one
    compared = 0
    for dt in spec.dtypes:
        for M, N in ((7, 1000), (3, 4096), (2, 40000)):
            if spec.check_supported(M, N, dt) is not None:
                continue
            xs = random_inputs(spec, dt, M, N, np.random.default_rng(M * N))
            d = execute(run_cuda, spec, xs, dt, spec.op_params(), "cuda")
            assert not d.unwritten and not d.guard_hits, (dt.tag, M, N)
            t = _on_torch(spec, xs, dt, stream)
            for out, bits in t.items():
                assert d.outputs[out].tobytes() == bits.tobytes(), (dt.tag, M, N, out)
            compared += 1
    assert compared >= 3, f"{name}: only {compared} (dtype, shape) pairs supported here"


def _reports(specs, level="quick"):
    from verifier.isolation import check_all
    from verifier.results.options import Options

    return {r.spec.name: r for r in check_all(specs, Options(level=level, device="cuda"), isolate=True)}


def test_the_check_child_finds_guard_poison_and_crash_defects():
    from verifier.declare.registry import load_spec_file

    specs = load_spec_file(GUARD_SPECS) + [_kernel(ROOT / "kernels" / "cuda" / "rmsnorm_spec.py", "cuda-rmsnorm-n3")]
    got = _reports(specs)
    for name, r in got.items():
        assert r.error is None, (name, r.error)
    checks = {name: {f.check for f in r.findings} for name, r in got.items()}
    assert "out-of-range-write" in checks["gpu-rmsnorm-overrun"] and "unwritten" not in checks["gpu-rmsnorm-overrun"]
    assert any("0 bytes after the end" in f.message for f in got["gpu-rmsnorm-overrun"].findings)
    assert "unwritten" in checks["gpu-rmsnorm-skip-last"]
    assert "out-of-range-write" not in checks["gpu-rmsnorm-skip-last"]
    assert "crash" in checks["gpu-rmsnorm-illegal"]  # (the static lint also sees the store to address 16)
    crash = next(f.message for f in got["gpu-rmsnorm-illegal"].findings if f.check == "crash")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in crash, crash
    assert got["cuda-rmsnorm-n3"].verdict == "pass" and not got["cuda-rmsnorm-n3"].findings


_FAULT = """
import sys, numpy as np
from verifier.declare.registry import load_spec_file
from verifier.launch.cuda import run_cuda
from verifier.spec import dtypes
spec = [k for k in load_spec_file(sys.argv[1]) if k.name == "gpu-rmsnorm-illegal"][0]
dt, M, N = dtypes("f32"), 4, 256
x, w = np.ones((M, N), np.float32), np.ones(N, np.float32)
if sys.argv[2] == "driver":
    from verifier.launch.harness import KernelFault, execute
    try:
        execute(run_cuda, spec, {"x": x, "w": w}, dt, spec.op_params(), "cuda")
    except KernelFault as e:
        print(type(e.original).__name__ + ": " + str(e.original))
else:
    import torch
    t = {k: torch.from_numpy(v).cuda() for k, v in (("x", x), ("w", w))}
    try:
        run_cuda(spec, t, {"y": torch.empty(M, N, device="cuda")}, spec.op_params(), dt, "cuda")
    except RuntimeError as e:
        print(type(e).__name__ + ": " + str(e))
"""


@needs_torch
def test_a_fault_is_the_same_error_on_driver_buffers_and_on_torch_tensors():
    seen = {}
    for memory in ("driver", "torch"):  # each in its own process: a fault leaves the context unusable
        out = subprocess.run([sys.executable, "-c", _FAULT, str(GUARD_SPECS), memory], cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        seen[memory] = out.stdout.strip().splitlines()[-1]
    assert seen["driver"] == seen["torch"], seen
    assert seen["driver"].startswith("RuntimeError: CUDA error after launch rms_illegal_f32 grid=(4,) block=(256,): "
                                     "CUDA_ERROR_ILLEGAL_ADDRESS"), seen


_NO_TORCH = """
import json, sys
from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.declare.registry import load_spec_file
spec = [k for k in load_spec_file("kernels/cuda/rmsnorm_spec.py") if k.name == "cuda-rmsnorm-n3"][0]
r = check_kernel(spec, Options(level="quick", device="cuda"))
print(json.dumps([r.verdict, len(r.findings), r.judged, sorted(m for m in ("torch", "cupy", "hypothesis") if m in sys.modules)]))
"""


def test_a_quick_check_of_a_cuda_kernel_runs_every_dtype_without_importing_torch():
    out = subprocess.run([sys.executable, "-c", _NO_TORCH], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    verdict, n, judged, imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert verdict == "pass" and n == 0, out.stdout
    assert all(judged.get(tag, 0) > 0 for tag in ("f32", "f16", "bf16")), judged  # every dtype ran inputs
    assert imported == [], out.stdout


@needs_torch
def test_a_process_holding_torch_still_runs_cuda_specs_on_driver_buffers(monkeypatch):
    """The pytest plugin's process (and this one) has torch imported; the harness still hands a CUDA spec's runner
    driver buffers, and its verdict is the check child's."""
    import torch  # noqa: F401

    from verifier.battery import check_kernel
    from verifier.launch import cuda as rc
    from verifier.results.options import Options

    kinds = set()
    real = rc.address

    def spy(name, t):
        kinds.add(type(t).__name__)
        return real(name, t)

    monkeypatch.setattr(rc, "address", spy)
    spec = _kernel(ROOT / "kernels" / "cuda" / "rmsnorm_spec.py", "cuda-rmsnorm-n3")
    r = check_kernel(spec, Options(level="quick", device="cuda"))
    assert r.verdict == "pass" and not r.findings, [f.message for f in r.findings]
    assert kinds == {"DeviceArray"}
