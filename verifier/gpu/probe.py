"""Is a CUDA GPU usable here? Answered without importing torch, whose import alone takes 4-5 s on an H200
machine (docs/benchmarks.md, verdict speed): the parent of isolated checks never launches anything, so it
only needs the answer (a CUDA kernel's child launches through the driver, verifier.launch.path).

torch already imported: its own answer. Otherwise: no torch, or a CPU build of torch ('+cpu' in its
version), is no GPU; else the driver (libcuda, which honours CUDA_VISIBLE_DEVICES) is asked for a device count.
"""
from __future__ import annotations

import ctypes
import sys
from functools import lru_cache

from verifier.constants import DEVICES
from verifier.errors import UsageError

CPU_BUILD_ARCHES = ("sm_80", "sm_90")  # what the build check compiles for without a GPU


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


def resolve_device(device: str) -> str:
    if device not in DEVICES:
        raise UsageError(f"unknown device {device!r}", fix="use cpu, cuda or auto")
    if device == "cpu":
        return "cpu"
    try:
        has_gpu = cuda_available()
    except Exception:
        has_gpu = False
    if device == "cuda" and not has_gpu:
        raise UsageError("--device cuda asked for, but torch sees no CUDA GPU",
                         fix="use --device auto or cpu, or install a CUDA build of torch")
    return "cuda" if has_gpu else "cpu"


def device_arch() -> str:
    """'sm_XY' of the GPU this process launches on (device 0 as CUDA_VISIBLE_DEVICES leaves them), from the
    CUDA driver: no torch import."""
    from verifier.gpu.libcuda import device_capability

    major, minor = device_capability()
    return f"sm_{major}{minor}"


def build_arches(opts) -> tuple:
    """The architectures the build check compiles for: the GPU's, else CPU_BUILD_ARCHES."""
    if opts.device == "cuda":
        return (device_arch(),)
    return CPU_BUILD_ARCHES


@lru_cache(maxsize=1)
def capability():
    """(major, minor) compute capability of device 0, or None where no GPU is usable (no driver, no device, a
    driver error); no CUDA context is created. Cached: one answer per process."""
    try:
        if driver_device_count() == 0:
            return None
        from verifier.gpu.libcuda import device_capability

        return device_capability()
    except Exception:
        return None

