"""The one GPU probe: is a CUDA GPU usable here, how many are there, which compute capability and arch.
Every such question in verifier (and in spec files: ``capability()``) is answered here.

Answered without importing torch, whose import alone takes 4-5 s on an H200 machine (docs/benchmarks.md,
verdict speed): the parent of isolated checks never launches anything, and a CUDA kernel's child launches
through the driver (verifier.launch.cuda), so neither needs torch for the answer.

- ``cuda_available()``: torch already imported and its CUDA initialised: its own answer. Otherwise no torch, or
  a CPU build of torch ('+cpu' in its version), is no GPU (Triton kernels, callables and ``verifier bench`` run
  on torch tensors); else the driver (libcuda, which honours CUDA_VISIBLE_DEVICES) is asked for a device count:
  in this process if it has initialised the driver already, else in a short child process, so that this one
  stays fit to fork children that use CUDA (``driver_initialized``).
- ``driver_initialized()``: whether this process has called cuInit (itself, through torch, a spec file): a fork
  of a process that has cannot use CUDA ("CUDA driver initialization failed"; seen on the H200,
  docs/gpu-runs/2026-12-02-issue-24.md). Asked without initialising it.
- ``capability()`` / ``device_arch()``: device 0's compute capability, from the driver.
- ``physical_gpu_count()``: ``nvidia-smi -L`` in another process, for pinning pytest-xdist workers: the driver
  reads CUDA_VISIBLE_DEVICES once, at cuInit, so a worker must not ask it before it is pinned.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from functools import lru_cache
from typing import Callable, Optional

from verifier.constants import DEVICES
from verifier.errors import ToolMissing, UsageError

CPU_BUILD_ARCHES = ("sm_80", "sm_90")  # what the build check compiles for without a GPU


def torch_version():
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


_CUDA_ERROR_NOT_INITIALIZED = 3
_COUNT_CHILD = ("import ctypes\nl = ctypes.CDLL('libcuda.so.1'); c = ctypes.c_int(0)\n"
                "print(c.value if l.cuInit(0) == 0 and l.cuDeviceGetCount(ctypes.byref(c)) == 0 else 0)")


def driver_initialized() -> bool:
    """Whether this process has initialised the CUDA driver (cuInit). cuDeviceGetCount answers
    CUDA_ERROR_NOT_INITIALIZED before cuInit and initialises nothing; without a driver there is nothing to
    initialise (False)."""
    from verifier.gpu import libcuda

    try:
        lib = libcuda._lib()
    except ToolMissing:
        return False
    count = libcuda.ctypes.c_int(0)
    return lib.cuDeviceGetCount(libcuda.ctypes.byref(count)) != _CUDA_ERROR_NOT_INITIALIZED


@lru_cache(maxsize=1)
def fork_safe_device_count() -> int:
    """driver_device_count(), without initialising the driver in this process when it has not been: asked of a
    short child process then (one python -I -S start, tens of ms), so that forks of this one can use CUDA."""
    from verifier.gpu import libcuda

    try:
        libcuda._lib()
    except ToolMissing:
        return 0
    if driver_initialized():
        return driver_device_count()
    try:
        out = subprocess.run([sys.executable, "-I", "-S", "-c", _COUNT_CHILD], capture_output=True, text=True,
                             timeout=60)
        return int(out.stdout.strip() or 0) if out.returncode == 0 else 0
    except (OSError, subprocess.SubprocessError, ValueError):
        return 0


@lru_cache(maxsize=1)
def driver_device_count() -> int:
    """Devices the CUDA driver sees (0 without a driver); no CUDA context is created."""
    from verifier.gpu import libcuda

    try:
        return libcuda.device_count()
    except (ToolMissing, libcuda.DriverError, AttributeError):  # no libcuda, no device, or a libcuda without it
        return 0


def cuda_available() -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "cuda"):
        up = getattr(torch.cuda, "is_initialized", lambda: True)()
        if up or getattr(getattr(torch, "version", None), "cuda", "") is None:
            return bool(torch.cuda.is_available())  # CUDA already up, or a CPU build: nothing to keep fork-safe
    version = torch_version()
    if version is None or "+cpu" in version:
        return False
    return fork_safe_device_count() > 0


@lru_cache(maxsize=1)
def capability() -> Optional[tuple]:
    """(major, minor) compute capability of device 0 (as CUDA_VISIBLE_DEVICES leaves them), or None without a
    GPU; from the driver, no torch import. Spec files call it (a cluster kernel needs 9.0, say)."""
    if driver_device_count() == 0:
        return None
    from verifier.gpu.libcuda import device_capability

    return device_capability()


def free_memory() -> Optional[int]:
    """Bytes free on device 0 now (None without a GPU); from the driver, no torch import. Where torch is imported
    and holds CUDA memory in its cache, that cache is released first: it is free for the asking."""
    if driver_device_count() == 0:
        return None
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "cuda") and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    from verifier.gpu.libcuda import memory_info

    return memory_info()[0]


def device_arch() -> str:
    """'sm_XY' of the GPU this process launches on (device 0 as CUDA_VISIBLE_DEVICES leaves them)."""
    cc = capability()
    if cc is None:
        raise ToolMissing("no CUDA GPU: the driver sees no device to build and launch CUDA kernels for",
                          fix="run on a machine with an NVIDIA GPU (check CUDA_VISIBLE_DEVICES), or check with "
                              "--device cpu (CUDA kernels are then built and resource-checked only)")
    return f"sm_{cc[0]}{cc[1]}"


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


def build_arches(opts) -> tuple:
    """The architectures the build check compiles for: the GPU's, else CPU_BUILD_ARCHES."""
    if opts.device == "cuda":
        return (device_arch(),)
    return CPU_BUILD_ARCHES


def free_memory_per_gpu(run: Callable = subprocess.run) -> dict:
    """Free device memory in bytes per GPU, keyed by both its index and its UUID (as CUDA_VISIBLE_DEVICES may
    name it), from ``nvidia-smi`` in another process, never through CUDA here ({} without nvidia-smi)."""
    if run is subprocess.run and shutil.which("nvidia-smi") is None:
        return {}
    try:
        out = run(["nvidia-smi", "--query-gpu=index,uuid,memory.free", "--format=csv,noheader,nounits"],
                  capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return {}
    if out.returncode != 0:
        return {}
    free = {}
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].isdigit() and parts[2].isdigit():
            free[parts[0]] = free[parts[1]] = int(parts[2]) << 20  # MiB
    return free


def physical_gpu_count(run: Callable = subprocess.run) -> int:
    """GPUs listed by ``nvidia-smi -L`` (0 without nvidia-smi or a driver), never through CUDA in this process.
    MIG instances are listed under their GPU and not counted separately; restrict with CUDA_VISIBLE_DEVICES to
    use them."""
    if run is subprocess.run and shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return 0
    if out.returncode != 0:
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
