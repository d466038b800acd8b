"""Does compute-sanitizer's initcheck see a counter set to zero before an atomic add? (issue #35 item 12: an 8-byte
UninitializedGlobalRead at a Triton ``tl.atomic_add`` on a counter from ``torch.zeros``.)

Each variant initializes a one-element counter one way, then adds to it atomically, and checks the sum. The driver
runs every variant in its own process under ``compute-sanitizer --tool initcheck`` (PyTorch's caching allocator off,
so each buffer is a fresh allocation) and prints, per variant, whether initcheck reported an uninitialized read.

    python benchmarks/initcheck_atomic_probe.py            # the table (needs a GPU and compute-sanitizer)
    python benchmarks/initcheck_atomic_probe.py VARIANT    # one variant, no sanitizer
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

VARIANTS = {
    "zeros-int64": "torch.zeros(1, dtype=torch.int64, device='cuda')",
    "zeros-int32": "torch.zeros(1, dtype=torch.int32, device='cuda')",
    "zeros-float32": "torch.zeros(1, dtype=torch.float32, device='cuda')",
    "full-int64": "torch.full((1,), 0, dtype=torch.int64, device='cuda')",
    "empty-zero_-int64": "torch.empty(1, dtype=torch.int64, device='cuda').zero_()",
    "copy-from-host-int64": "torch.tensor([0], dtype=torch.int64).cuda()",
    "kernel-written-int64": "written_by_a_kernel()",
}


def run(variant: str) -> int:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(counter_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        ones = tl.where(offs < n, 1, 0)
        tl.atomic_add(counter_ptr, tl.sum(ones, axis=0).to(counter_ptr.dtype.element_ty))

    @triton.jit
    def store_zero(counter_ptr):
        tl.store(counter_ptr, tl.zeros((), dtype=counter_ptr.dtype.element_ty))

    def written_by_a_kernel():
        c = torch.empty(1, dtype=torch.int64, device="cuda")
        store_zero[(1,)](c)
        return c

    counter = eval(VARIANTS[variant], {"torch": torch, "written_by_a_kernel": written_by_a_kernel})
    n = 1000
    add_one[(triton.cdiv(n, 128),)](counter, n, BLOCK=128)
    torch.cuda.synchronize()
    got = int(counter.item())
    print(f"{variant}: counter = {got} (expected {n})")
    return 0 if got == n else 1


def main() -> int:
    if len(sys.argv) > 1:
        return run(sys.argv[1])
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    print(f"{'variant':24s} {'exit':>4s}  initcheck")
    for v in VARIANTS:
        p = subprocess.run(["compute-sanitizer", "--tool", "initcheck", "--print-limit", "5", sys.executable,
                            __file__, v], capture_output=True, text=True, env=env, timeout=300)
        text = p.stdout + p.stderr
        hits = re.findall(r"Uninitialized __global__ memory read of size (\d+) bytes", text)
        where = re.findall(r"at (\S+) in (\S+)", text)[:1]
        summary = re.search(r"ERROR SUMMARY: (\d+) error", text)
        print(f"{v:24s} {p.returncode:>4d}  {len(hits)} uninitialized read(s) of {sorted(set(hits))} bytes "
              f"{where}; summary {summary.group(1) if summary else '?'}")
        sys.stdout.flush()
        if v == "zeros-int64":
            print("\n".join("    | " + line for line in text.splitlines()[:40]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
