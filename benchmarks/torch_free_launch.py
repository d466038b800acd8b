"""What a fresh process pays before its first CUDA kernel result: the one CUDA runner (verifier.launch.cuda, the
CUDA driver API) on torch tensors, which costs the torch import, vs on driver buffers through the harness, as the
`verifier check` child runs it. Each case runs in its own interpreter, after one untimed run that warms the nvcc
cache; the ratio is measured side by side in one run.

    python benchmarks/torch_free_launch.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SPEC = "from verifier.declare.registry import load_spec_file; k = load_spec_file('kernels/cuda/softmax_fast_spec.py')[0]; "
CASES = {
    "python -c pass": "pass",
    "import torch; CUDA context": "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()",
    "runner on torch tensors: S5 once": (
        "import torch; from verifier.spec import dtypes; from verifier.launch.cuda import run_cuda; " + _SPEC +
        "x = torch.randn(64, 1024, device='cuda'); y = torch.empty_like(x); "
        "run_cuda(k, {'x': x}, {'y': y}, {}, dtypes('f32'), 'cuda'); assert abs(y.sum().item() - 64) < 1e-3"),
    "runner on driver buffers: S5 once": (
        "import numpy as np; from verifier.launch.harness import execute; from verifier.launch.cuda import run_cuda; "
        "from verifier.spec import dtypes; " + _SPEC +
        "x = np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32); "
        "r = execute(run_cuda, k, {'x': x}, dtypes('f32'), {}, 'cuda', check_poison=False); "
        "assert abs(r.outputs['y'].sum() - 64) < 1e-3"),
}


def wall(code: str) -> float:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"failed: {code}\n{out.stderr[-2000:]}")
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    from verifier.gpu.probe import driver_device_count

    if driver_device_count() == 0:
        print("torch_free_launch: needs an NVIDIA GPU and its driver (libcuda)", file=sys.stderr)
        return 2
    for code in CASES.values():  # warm the build cache and the file cache
        wall(code)
    med = {}
    for name, code in CASES.items():
        times = [wall(code) for _ in range(args.repeats)]
        med[name] = statistics.median(times)
        print(f"{name:32s} median {med[name]:6.2f} s  ({', '.join(f'{t:.2f}' for t in times)})")
    a, b = med["runner on torch tensors: S5 once"], med["runner on driver buffers: S5 once"]
    print(f"torch tensors / driver buffers: {a / b:.1f}x ({a - b:.2f} s saved per process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
