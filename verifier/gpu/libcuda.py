"""The CUDA driver API through ctypes over libcuda: memory, modules, launches, without torch or CuPy.

Why: a `verifier check` child spends 4-5 s importing torch on an H200 machine and under 2 s on everything else
(docs/benchmarks.md, verdict speed); CUDA kernels need none of torch, only device memory, a module and a
launch. verifier.launch.cuda binds a CudaKernel spec's launches to device addresses and launches them through
this module, whoever holds the memory (driver buffers here, or torch tensors).

The primary context of device 0 (as CUDA_VISIBLE_DEVICES leaves them) is used: it is the context torch's
runtime API uses too, so their memory and streams are valid here. Every driver error is raised with the call,
the driver's name for the code and its message.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache
from pathlib import Path

import numpy as np

from verifier.errors import ToolMissing, VerifierError

_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class DriverError(VerifierError):
    """A CUDA driver call failed (a launch error names the launch). ``text``: the driver's name for the
    error code and its message, e.g. 'CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered'."""

    def __init__(self, message: str, text: str = ""):
        super().__init__(message)
        self.text = text or message


class LaunchError(DriverError):
    """A kernel launch, or the synchronize after it, failed: the kernel's fault, not the verifier's."""


@lru_cache(maxsize=1)
def _lib():
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise ToolMissing("no CUDA driver (libcuda) on this machine: CUDA kernels need an NVIDIA GPU and its driver",
                      fix="run on a machine with an NVIDIA driver, or check Python kernels with --device cpu")


def _error_text(lib, code: int) -> str:
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    lib.cuGetErrorName(code, ctypes.byref(name))
    lib.cuGetErrorString(code, ctypes.byref(text))
    return f"{(name.value or b'CUDA_ERROR_' + str(code).encode()).decode()}: {(text.value or b'').decode()}"


def _check(code: int, what: str, error=DriverError) -> None:
    if code != 0:
        text = _error_text(_lib(), code)
        raise error(f"{what} failed: {text}", text)


@lru_cache(maxsize=1)
def _primary() -> int:
    lib = _lib()
    _check(lib.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    _check(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet(0)")
    ctx = ctypes.c_void_p()
    _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    return ctx.value


def context() -> int:
    """The retained primary context of device 0 (retained once a process), made current on the calling thread
    (a context is current per thread: a call from another thread than the first must set it too)."""
    ctx = _primary()
    _check(_lib().cuCtxSetCurrent(ctypes.c_void_p(ctx)), "cuCtxSetCurrent")
    return ctx


def device_count() -> int:
    """Devices the driver sees (it honours CUDA_VISIBLE_DEVICES); no context is created."""
    lib, count = _lib(), ctypes.c_int(0)
    _check(lib.cuInit(0), "cuInit")
    _check(lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    return count.value


def device_limits() -> tuple:
    """(multiprocessor count, opt-in shared memory per block in bytes) of device 0: what a host reads to pick a
    kernel's path and grid (ggml's nsm and smpbo)."""
    lib, sms, optin = _lib(), ctypes.c_int(), ctypes.c_int()
    _check(lib.cuInit(0), "cuInit")
    _check(lib.cuDeviceGetAttribute(ctypes.byref(sms), _CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
           "cuDeviceGetAttribute")
    _check(lib.cuDeviceGetAttribute(ctypes.byref(optin), _CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0),
           "cuDeviceGetAttribute")
    return sms.value, optin.value


def device_capability() -> tuple:
    """(major, minor) compute capability of device 0, from the driver (no context is created). Ask
    verifier.gpu.probe.capability(), which caches it and answers None without a GPU."""
    lib, major, minor = _lib(), ctypes.c_int(), ctypes.c_int()
    _check(lib.cuInit(0), "cuInit")
    _check(lib.cuDeviceGetAttribute(ctypes.byref(major), _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0),
           "cuDeviceGetAttribute")
    _check(lib.cuDeviceGetAttribute(ctypes.byref(minor), _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0),
           "cuDeviceGetAttribute")
    return major.value, minor.value


def memory_info() -> tuple:
    """(free, total) bytes of device 0's memory (cuMemGetInfo in the primary context)."""
    context()
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    _check(_lib().cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
    return free.value, total.value


def synchronize(what: str = "cuCtxSynchronize", error=DriverError) -> None:
    _check(_lib().cuCtxSynchronize(), what, error)


def stream_synchronize(stream: int = 0, what: str = "cuStreamSynchronize", error=DriverError) -> None:
    """Wait for ``stream`` (0: the default stream); a fault of a kernel on it is raised as ``error``."""
    _check(_lib().cuStreamSynchronize(ctypes.c_void_p(stream or None)), what, error)


class DeviceBuffer:
    """``nbytes`` of device memory; freed on close() or garbage collection."""

    def __init__(self, nbytes: int):
        context()
        self.nbytes = max(int(nbytes), 1)
        ptr = ctypes.c_uint64()
        _check(_lib().cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(self.nbytes)), f"cuMemAlloc({self.nbytes})")
        self.ptr = ptr.value

    @classmethod
    def from_array(cls, arr: np.ndarray) -> "DeviceBuffer":
        buf = cls(arr.nbytes)
        buf.upload(arr)
        return buf

    def upload(self, arr: np.ndarray, offset: int = 0) -> None:
        """Copy ``arr`` to ``offset`` bytes into the buffer."""
        a = np.ascontiguousarray(arr)
        if offset + a.nbytes > self.nbytes:
            raise ValueError(f"{a.nbytes} bytes at {offset} do not fit a {self.nbytes}-byte buffer")
        _check(_lib().cuMemcpyHtoD_v2(ctypes.c_uint64(self.ptr + offset), a.ctypes.data_as(ctypes.c_void_p),
                                      ctypes.c_size_t(a.nbytes)), "cuMemcpyHtoD")

    def download(self, dtype, shape, offset: int = 0) -> np.ndarray:
        """``shape`` elements of ``dtype`` from ``offset`` bytes into the buffer."""
        out = np.empty(shape, dtype=dtype)
        if offset + out.nbytes > self.nbytes:
            raise ValueError(f"{out.nbytes} bytes at {offset} asked of a {self.nbytes}-byte buffer")
        _check(_lib().cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(self.ptr + offset),
                                      ctypes.c_size_t(out.nbytes)), "cuMemcpyDtoH")
        return out

    def copy_within(self, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from ``src`` to ``dst`` bytes into this buffer, on the device (regions must not overlap)."""
        if max(dst, src) + nbytes > self.nbytes or abs(dst - src) < nbytes:
            raise ValueError(f"copy of {nbytes} bytes {src} -> {dst} in a {self.nbytes}-byte buffer")
        _check(_lib().cuMemcpyDtoD_v2(ctypes.c_uint64(self.ptr + dst), ctypes.c_uint64(self.ptr + src),
                                      ctypes.c_size_t(nbytes)), "cuMemcpyDtoD")

    def fill(self, start: int, pattern: np.ndarray, nbytes: int) -> None:
        """Fill ``nbytes`` from ``start`` bytes in with ``pattern`` repeated (the last one cut short where it ends):
        one host-to-device copy of the pattern, then device copies doubling the filled part."""
        p = np.ascontiguousarray(pattern).reshape(-1).view(np.uint8)
        if nbytes <= 0:
            return
        done = min(p.nbytes, nbytes)
        self.upload(p[:done], start)
        while done < nbytes:
            step = min(done, nbytes - done)
            self.copy_within(start + done, start, step)
            done += step

    def close(self) -> None:
        if self.ptr:
            _lib().cuMemFree_v2(ctypes.c_uint64(self.ptr))
            self.ptr = 0

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the driver may be gone already
            pass


_MODULES: dict = {}


def function(cubin: Path, entry: str) -> int:
    """The CUfunction ``entry`` of a cubin file (modules loaded once per process)."""
    context()
    lib = _lib()
    mod = _MODULES.get(str(cubin))
    if mod is None:
        handle = ctypes.c_void_p()
        _check(lib.cuModuleLoad(ctypes.byref(handle), str(cubin).encode()), f"cuModuleLoad({cubin})")
        mod = _MODULES[str(cubin)] = handle.value
    fn = ctypes.c_void_p()
    _check(lib.cuModuleGetFunction(ctypes.byref(fn), ctypes.c_void_p(mod), entry.encode()),
           f"cuModuleGetFunction({entry!r})")
    return fn.value


_CTYPE = {np.dtype(np.int32): ctypes.c_int32, np.dtype(np.int64): ctypes.c_int64,
          np.dtype(np.uint32): ctypes.c_uint32, np.dtype(np.uint64): ctypes.c_uint64,
          np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double,
          np.dtype(np.bool_): ctypes.c_bool, np.dtype(np.int8): ctypes.c_int8, np.dtype(np.uint8): ctypes.c_uint8,
          np.dtype(np.int16): ctypes.c_int16, np.dtype(np.uint16): ctypes.c_uint16}


def kernel_params(args) -> tuple:
    """(void** array, the ctypes values it points to) for cuLaunchKernel: numpy scalars by value (their
    width and type kept), DeviceBuffers as 64-bit device pointers, ``bytes`` as they are (a struct passed by value,
    packed in C layout by verifier.launch.cuda). The values must outlive the launch call."""
    values = []
    for a in args:
        if isinstance(a, DeviceBuffer):
            values.append(ctypes.c_uint64(a.ptr))
        elif isinstance(a, (bytes, bytearray)) and a:
            values.append((ctypes.c_char * len(a)).from_buffer_copy(a))
        elif isinstance(a, np.generic) and a.dtype in _CTYPE:
            values.append(_CTYPE[a.dtype](a.item()))
        else:
            raise TypeError(f"kernel argument {a!r}: pass a DeviceBuffer, bytes or a numpy scalar of "
                            f"{', '.join(sorted(str(d) for d in _CTYPE))}")
    ptrs = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
    return ptrs, values


def set_max_dynamic_smem(fn: int, smem: int, name: str = "kernel") -> None:
    """Allow ``fn`` ``smem`` bytes of dynamic shared memory (needed above the default 48 KiB)."""
    _check(_lib().cuFuncSetAttribute(ctypes.c_void_p(fn), _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     ctypes.c_int(smem)),
           f"cuFuncSetAttribute({name}, max dynamic shared memory {smem})")


def dims(v) -> tuple:
    """A grid or block of 1-3 extents as the three cuLaunchKernel takes."""
    return (tuple(int(x) for x in v) + (1, 1))[:3]


def launch(fn: int, grid, block, params, smem: int = 0, stream: int = 0, name: str = "kernel",
           cooperative: bool = False) -> None:
    """cuLaunchKernel of ``fn`` on ``stream`` (0: the default stream) with ``params``, the void** array of
    kernel_params (whose values must stay alive until this returns); ``cooperative``: cuLaunchCooperativeKernel
    (every block resident at once: a grid larger than that is refused). Asynchronous: a fault of the kernel shows at
    the next synchronize; a refused launch (bad configuration, a sticky earlier fault) raises LaunchError here."""
    g, b = dims(grid), dims(block)
    shape = (*(ctypes.c_uint(v) for v in g), *(ctypes.c_uint(v) for v in b), ctypes.c_uint(smem),
             ctypes.c_void_p(stream or None), params)
    if cooperative:
        _check(_lib().cuLaunchCooperativeKernel(ctypes.c_void_p(fn), *shape),
               f"cooperative launch {name} grid={g} block={b}", LaunchError)
        return
    _check(_lib().cuLaunchKernel(ctypes.c_void_p(fn), *shape, None), f"launch {name} grid={g} block={b}", LaunchError)
