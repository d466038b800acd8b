"""What a fork may do with CUDA (the facts behind verifier.isolation.forked and verifier.gpu.probe): prints the
bytecode settings (where PYTHONDONTWRITEBYTECODE is set, torch is compiled from source at every import), whether
cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED (3) before cuInit, and, in forked children, whether CUDA
works (A) after the parent imported torch only, (B) through the driver alone, and (C, D) after the parent called
cuInit: run on the H200 (docs/gpu-runs/2026-12-02-issue-24.md, run 2), A and B work, C and D fail.

    python benchmarks/cuda_fork_probe.py
"""
import ctypes
import importlib.util
import os
import sys
import time


def child(tag, code):
    pid = os.fork()
    if pid == 0:
        try:
            exec(code, {})
            print(tag, "child OK", flush=True)
            os._exit(0)
        except BaseException as e:  # noqa: BLE001 - reported, the point of the probe
            print(tag, "child FAILED:", type(e).__name__, str(e)[:200], flush=True)
            os._exit(1)
    _, st = os.waitpid(pid, 0)
    print(tag, "exit", os.waitstatus_to_exitcode(st), flush=True)


def main():
    print("python", sys.version.split()[0], "dont_write_bytecode", sys.dont_write_bytecode, "pycache_prefix",
          sys.pycache_prefix)
    print({k: v for k, v in os.environ.items() if k.startswith("PYTHON")})
    d = os.path.dirname(importlib.util.find_spec("torch").origin)
    cache = os.path.join(d, "__pycache__")
    print("torch dir", d, "writable", os.access(d, os.W_OK), "pycache exists", os.path.isdir(cache))
    lib = ctypes.CDLL("libcuda.so.1")
    n = ctypes.c_int()
    print("cuDeviceGetCount before cuInit:", lib.cuDeviceGetCount(ctypes.byref(n)), n.value)
    t = time.time()
    import torch  # noqa: F401

    print("import torch", round(time.time() - t, 2))
    code = "import torch; x = torch.ones(4, device='cuda'); torch.cuda.synchronize(); assert x.sum().item() == 4"
    child("A import-torch-only", code)
    print("cuDeviceGetCount after import torch:", lib.cuDeviceGetCount(ctypes.byref(n)), n.value)
    code2 = ("import ctypes; l = ctypes.CDLL('libcuda.so.1'); r = l.cuInit(0); c = ctypes.c_int(); "
             "r2 = l.cuDeviceGetCount(ctypes.byref(c)); print('child cuInit', r, 'count', r2, c.value); assert r == 0")
    child("B driver-in-child", code2)
    print("parent cuInit:", lib.cuInit(0))
    print("count after:", lib.cuDeviceGetCount(ctypes.byref(n)), n.value)
    child("C after-parent-cuInit torch", code)
    child("D after-parent-cuInit driver", code2)


if __name__ == "__main__":
    main()
