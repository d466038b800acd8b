"""Is a CUDA GPU usable here? Answered without importing torch, whose import alone takes 4-5 s on an H200
machine (docs/benchmarks.md, verdict speed): the parent of isolated checks never launches anything, so it
only needs the answer (a CUDA kernel's child launches through the driver, verifier.launch_path).

torch already imported: its own answer. Otherwise: no torch, or a CPU build of torch ('+cpu' in its
version), is no GPU; else the driver (libcuda, which honours CUDA_VISIBLE_DEVICES) is asked for a device count.
"""
from __future__ import annotations

import ctypes
import sys
from functools import lru_cache


def torch_version():
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def driver_device_count() -> int:
    """Devices the CUDA driver sees (0 without a driver); no CUDA context is created."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        try:
            if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return 0
        except AttributeError:
            return 0
        return count.value
    return 0


def cuda_available() -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "cuda"):
        return bool(torch.cuda.is_available())
    version = torch_version()
    if version is None or "+cpu" in version:
        return False
    return driver_device_count() > 0
