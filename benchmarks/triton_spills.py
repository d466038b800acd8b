"""Local memory (spills + stack) of the bundled one-block Triton kernels on sm_90, without a GPU: each kernel is
compiled by Triton for target cuda:90 at each row length and dtype, with the launch configuration its launcher
uses (BLOCK = next power of two, num_warps from the module), and its PTX is assembled by Triton's own ptxas
with -v. On the H200 (Triton 3.6) the resources step reported exactly these bytes for N = 65536 (run 20 of
docs/gpu-runs/2026-12-01-architecture.md: 256 to 3504 bytes); kernels/triton/spec.py's limits come from here.

    python benchmarks/triton_spills.py [--n 8192 16384 32768 65536] [--warps W]

N is tried a multiple of 16 ('div16': Triton specializes such integers and vectorizes the masked loads) and
one less (not). The Triton installed is the one that compiles: use the GPU machine's version (3.6 there).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = [("softmax.py", "softmax_kernel"), ("rmsnorm.py", "rmsnorm_kernel"), ("layernorm.py", "layernorm_kernel"),
           ("fused_add_rmsnorm.py", "fused_add_rmsnorm_kernel")]
DTYPES = ("fp32", "fp16", "bf16")


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name[:-3], ROOT / "kernels" / "triton" / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _signature(fn, dtype: str) -> dict:
    """Pointers to ``dtype``, eps a float, BLOCK constexpr, the other arguments 32-bit integers."""
    sig = {}
    for name in fn.arg_names:
        sig[name] = "constexpr" if name == "BLOCK" else "fp32" if name == "eps" else \
            "*" + dtype if name.endswith("_ptr") else "i32"
    return sig


def local_bytes(fn, dtype: str, n: int, warps: int, div16: bool) -> tuple:
    """(local bytes, registers) of ``fn`` compiled for sm_90a at row length ``n``."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = _signature(fn, dtype)
    # pointers are 16-byte aligned (torch's allocations); N and the strides are multiples of 16 when div16
    aligned = [i for i, a in enumerate(fn.arg_names)
               if sig[a].startswith("*") or (div16 and sig[a] == "i32")]
    src = ASTSource(fn=fn, signature=sig, constexprs={"BLOCK": triton.next_power_of_2(n)},
                    attrs={(i,): [["tt.divisibility", 16]] for i in aligned})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    with tempfile.TemporaryDirectory() as tmp:
        ptx = os.path.join(tmp, "k.ptx")
        Path(ptx).write_text(k.asm["ptx"])
        out = subprocess.run([str(ptxas), "-v", "--gpu-name=sm_90a", ptx, "-o", ptx + ".o"], capture_output=True,
                             text=True, check=True)
    text = out.stdout + out.stderr
    stack = re.search(r"(\d+) bytes stack frame", text)
    regs = re.search(r"Used (\d+) registers", text)
    return int(stack.group(1)) if stack else -1, int(regs.group(1)) if regs else -1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1024, 4096, 8192, 16384, 32768, 65536])
    ap.add_argument("--warps", type=int, help="num_warps for every N (default: each module's own choice)")
    args = ap.parse_args(argv)
    import triton

    print(f"triton {triton.__version__}, target sm_90a; local = bytes of stack frame (spills included)")
    print(f"{'kernel':26s} {'dtype':5s} {'N':>6s} {'div16':>5s} {'warps':>5s} {'local':>6s} {'regs':>5s}")
    worst = 0
    for module, name in KERNELS:
        mod = _module(module)
        fn = getattr(mod, name)
        for dtype in DTYPES:
            for n in args.n:
                if n > mod.MAX_N and args.warps is None:
                    continue  # refused by its launcher
                block = triton.next_power_of_2(n)
                warps = args.warps or mod.num_warps(block)
                for div16 in (True, False):
                    local, regs = local_bytes(fn, dtype, n if div16 else n - 1, warps, div16)
                    worst = max(worst, local)
                    print(f"{name:26s} {dtype:5s} {n if div16 else n - 1:6d} {'yes' if div16 else 'no':>5s} "
                          f"{warps:5d} {local:6d} {regs:5d}", flush=True)
    print(f"largest local memory: {worst} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
