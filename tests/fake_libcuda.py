"""A stand-in for libcuda on a CPU, for tests of the one CUDA launch path (verifier.launch.cuda over
verifier.gpu.libcuda): host memory plays device memory, a cubin is a name, a kernel is a Python function over that
memory. Every driver call is recorded, and cuLaunchKernel records what reaches it: the function, grid, block,
dynamic shared memory, stream and each parameter's ctypes type (its width) and value.

Kernels run at launch, asynchronously as on a GPU: an access outside every live allocation is an illegal address,
a sticky error returned by the next synchronize and every call after it. No torch here: the check-child test
installs it in a process that must not import torch.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ILLEGAL_ADDRESS, NOT_FOUND, OUT_OF_RESOURCES, MISALIGNED_ADDRESS = 700, 500, 701, 716
INVALID_VALUE = 1
GRID_YZ = 65535  # the driver's limit on grid.y and grid.z
_NAMES = {ILLEGAL_ADDRESS: (b"CUDA_ERROR_ILLEGAL_ADDRESS", b"an illegal memory access was encountered"),
          INVALID_VALUE: (b"CUDA_ERROR_INVALID_VALUE", b"invalid argument"),
          NOT_FOUND: (b"CUDA_ERROR_NOT_FOUND", b"named symbol not found"),
          OUT_OF_RESOURCES: (b"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", b"too many resources requested for launch"),
          MISALIGNED_ADDRESS: (b"CUDA_ERROR_MISALIGNED_ADDRESS", b"misaligned address")}
ILLEGAL_TEXT = "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
ALLOC_ALIGN = 256  # cuMemAlloc's guarantee


class Illegal(Exception):
    pass


class Misaligned(Exception):
    """Raised by an emulated kernel whose vector load or store is not aligned to its width."""


@dataclass
class Launched:
    entry: str
    grid: tuple
    block: tuple
    smem: int
    stream: int
    params: list  # (ctypes type, value) per parameter, as the kernel receives them

    def values(self) -> list:
        return [v for _, v in self.params]

    def types(self) -> list:
        return [t for t, _ in self.params]


def _value(v):
    """A parameter as the kernel receives it: a scalar's value, a struct's bytes (a c_char array's ``.value`` would
    stop at its first zero byte)."""
    return v.raw if isinstance(v, ctypes.Array) else v.value


def _set(ref, value):  # what the driver writes through an out-parameter (a ctypes.byref)
    ref._obj.value = value


class FakeLib:
    def __init__(self, kernels: dict):
        self.kernels = kernels  # entry -> fn(lib, args) with args the parameter values
        self.calls: list = []  # driver call names, in order
        self.allocs: dict = {}  # address -> uint8 array
        self.alloc_log: list = []  # (address, nbytes) of every cuMemAlloc, in order
        self.functions: dict = {}
        self.launched: list = []
        self.attributes: list = []  # (entry, attribute, value) of cuFuncSetAttribute
        self.synced: list = []  # streams synchronized (None: the context)
        self.sticky = 0
        self.refuse: dict = {}  # entry -> the error cuLaunchKernel returns for it (the launch does not run)
        self.values: dict = {}  # address -> ctypes value, filled by the kernel_params wrapper
        self.free_bytes, self.total_bytes = 80 << 30, 96 << 30  # what cuMemGetInfo answers
        self.vmm = None  # enable_vmm(): the virtual memory management API, with real aliasing

    def __getattr__(self, name):  # a driver call the fake does not know is a test failure, not a silent 0
        raise AttributeError(f"FakeLib has no {name}")

    def _call(self, name):
        self.calls.append(name)

    # --- memory, as host arrays ----------------------------------------------------------------------------
    def region(self, ptr: int, nbytes: int) -> np.ndarray:
        for start, a in self.allocs.items():
            if start <= ptr and ptr + nbytes <= start + a.nbytes:
                return a[ptr - start:ptr - start + nbytes]
        raise Illegal(f"{nbytes} bytes at {ptr:#x}")

    def view(self, ptr, dtype, count: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        return self.region(int(ptr), count * dtype.itemsize).view(dtype)

    def add_host(self, ptr: int, nbytes: int):
        """Let kernels reach memory the test allocated itself (a CPU torch tensor's storage)."""
        self.allocs[int(ptr)] = np.frombuffer((ctypes.c_uint8 * nbytes).from_address(int(ptr)), dtype=np.uint8)

    # --- the driver API ------------------------------------------------------------------------------------
    def cuInit(self, flags):
        self._call("cuInit")
        return 0

    def cuDeviceGetCount(self, ref):
        self._call("cuDeviceGetCount")
        _set(ref, 1)
        return 0

    def cuDeviceGetAttribute(self, ref, attr, dev):
        self._call("cuDeviceGetAttribute")
        _set(ref, {75: 9, 76: 0, 102: int(self.vmm is not None), 16: 132, 97: 227 * 1024}[attr])  # an H100's
        return 0

    # --- the virtual memory management API, as host mappings: each physical allocation a memfd, each cuMemMap an
    # mmap of it at a fixed address inside a reserved range, so aliased ranges alias for real (Linux only) -------
    def enable_vmm(self, granularity: int = 4096) -> None:
        import mmap
        import os

        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                                  ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.vmm = SimpleNamespace(libc=libc, os=os, mmap=mmap, granularity=granularity, files={}, maps={},
                                   reserved={}, created=[], mapped=[])  # sizes of every cuMemCreate / cuMemMap

    def cuMemGetAllocationGranularity(self, ref, prop, option):
        self._call("cuMemGetAllocationGranularity")
        _set(ref, self.vmm.granularity)
        return 0

    def cuMemAddressReserve(self, ref, size, align, addr, flags):
        self._call("cuMemAddressReserve")
        m = self.vmm.mmap
        ptr = self.vmm.libc.mmap(None, size.value, 0, m.MAP_PRIVATE | m.MAP_ANONYMOUS | 0x4000, -1, 0)
        self.vmm.reserved[ptr] = size.value
        _set(ref, ptr)
        return 0

    def cuMemCreate(self, ref, size, prop, flags):
        self._call("cuMemCreate")
        if size.value % self.vmm.granularity:
            return INVALID_VALUE
        fd = self.vmm.os.memfd_create("fake-cuMemCreate")
        self.vmm.os.ftruncate(fd, size.value)
        self.vmm.files[fd] = size.value
        self.vmm.created.append(size.value)
        _set(ref, fd)
        return 0

    def cuMemMap(self, ptr, size, offset, handle, flags):
        self._call("cuMemMap")
        if offset.value != 0 or size.value > self.vmm.files[handle.value]:
            return INVALID_VALUE  # as the driver: the offset must be 0
        m = self.vmm.mmap
        got = self.vmm.libc.mmap(ptr.value, size.value, m.PROT_READ | m.PROT_WRITE, m.MAP_SHARED | 0x10,
                                 handle.value, 0)
        assert got == ptr.value
        self.vmm.maps[ptr.value] = (size.value, handle.value)
        self.vmm.mapped.append(size.value)
        return 0

    def cuMemSetAccess(self, ptr, size, desc, count):
        self._call("cuMemSetAccess")
        self.allocs[ptr.value] = np.frombuffer((ctypes.c_uint8 * size.value).from_address(ptr.value), dtype=np.uint8)
        return 0

    def cuMemUnmap(self, ptr, size):
        self._call("cuMemUnmap")
        self.allocs.pop(ptr.value, None)
        self.vmm.maps.pop(ptr.value, None)
        return 0

    def cuMemRelease(self, handle):
        self._call("cuMemRelease")
        self.vmm.files.pop(handle.value)
        self.vmm.os.close(handle.value)
        return 0

    def cuMemAddressFree(self, ptr, size):
        self._call("cuMemAddressFree")
        self.allocs.pop(ptr.value, None)
        self.vmm.libc.munmap(ptr.value, self.vmm.reserved.pop(ptr.value))
        return 0

    def cuDeviceGet(self, ref, ordinal):
        self._call("cuDeviceGet")
        _set(ref, 0)
        return 0

    def cuDevicePrimaryCtxRetain(self, ref, dev):
        self._call("cuDevicePrimaryCtxRetain")
        _set(ref, 0xC0)
        return 0

    def cuCtxSetCurrent(self, ctx):
        self._call("cuCtxSetCurrent")
        return 0

    def cuMemAlloc_v2(self, ref, size):
        self._call("cuMemAlloc")
        raw = np.full(size.value + ALLOC_ALIGN, 0xCD, dtype=np.uint8)  # garbage, as cuMemAlloc leaves it
        skip = -raw.ctypes.data % ALLOC_ALIGN
        a = raw[skip:skip + size.value]  # aligned as cuMemAlloc's are (a view keeps its base alive)
        self.allocs[a.ctypes.data] = a
        self.alloc_log.append((a.ctypes.data, size.value))
        _set(ref, a.ctypes.data)
        return 0

    def cuMemcpyHtoD_v2(self, dst, src, n):
        self._call("cuMemcpyHtoD")
        if self.sticky:
            return self.sticky
        ctypes.memmove(self.region(dst.value, n.value).ctypes.data, src.value, n.value)
        return 0

    def cuMemcpyDtoH_v2(self, dst, src, n):
        self._call("cuMemcpyDtoH")
        if self.sticky:
            return self.sticky
        ctypes.memmove(dst.value, self.region(src.value, n.value).ctypes.data, n.value)
        return 0

    def cuMemcpyDtoD_v2(self, dst, src, n):
        self._call("cuMemcpyDtoD")
        if self.sticky:
            return self.sticky
        ctypes.memmove(self.region(dst.value, n.value).ctypes.data, self.region(src.value, n.value).ctypes.data,
                       n.value)
        return 0

    def cuMemGetInfo_v2(self, free, total):
        self._call("cuMemGetInfo")
        _set(free, self.free_bytes)
        _set(total, self.total_bytes)
        return 0

    def cuMemFree_v2(self, ptr):
        self._call("cuMemFree")
        self.allocs.pop(ptr.value, None)
        return 0

    def cuModuleLoad(self, ref, path):
        self._call("cuModuleLoad")
        _set(ref, 0x40)
        return 0

    def cuModuleGetFunction(self, ref, mod, name):
        self._call("cuModuleGetFunction")
        entry = name.decode()
        if entry not in self.kernels:
            return NOT_FOUND
        handle = 0x1000 + sorted(self.kernels).index(entry)
        self.functions[handle] = entry
        _set(ref, handle)
        return 0

    def cuFuncSetAttribute(self, fn, attr, value):
        self._call("cuFuncSetAttribute")
        self.attributes.append((self.functions[fn.value], attr, value.value))
        return 0

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        self._call("cuLaunchKernel")
        if self.sticky:
            return self.sticky
        entry = self.functions[fn.value]
        if entry in self.refuse:
            return self.refuse[entry]
        if gy.value > GRID_YZ or gz.value > GRID_YZ:
            return INVALID_VALUE
        received = [self.values[p] for p in params if p is not None]
        self.launched.append(Launched(entry, (gx.value, gy.value, gz.value), (bx.value, by.value, bz.value),
                                      smem.value, stream.value or 0,
                                      [(type(v), _value(v)) for v in received]))
        try:
            self.kernels[entry](self, [_value(v) for v in received])
        except Illegal:
            self.sticky = ILLEGAL_ADDRESS  # shows at the next synchronize
        except Misaligned:
            self.sticky = MISALIGNED_ADDRESS
        return 0

    def cuStreamSynchronize(self, stream):
        self._call("cuStreamSynchronize")
        self.synced.append(stream.value or 0)
        return self.sticky

    def cuCtxSynchronize(self):
        self._call("cuCtxSynchronize")
        self.synced.append(None)
        return self.sticky

    def cuGetErrorName(self, code, ref):
        _set(ref, _NAMES[code][0])
        return 0

    def cuGetErrorString(self, code, ref):
        _set(ref, _NAMES[code][1])
        return 0


def install(kernels: dict, patch=setattr) -> FakeLib:
    """Put a FakeLib under verifier.gpu.libcuda, with a fake cubin build and arch sm_90; returns it. ``patch``:
    pytest's monkeypatch.setattr (undone after the test), or setattr in a child process."""
    from verifier.gpu import libcuda as cd
    from verifier.gpu import probe
    from verifier.launch import cuda as rc

    lib = FakeLib(kernels)
    real_params = cd.kernel_params

    def recording_params(args):  # what each void* of cuLaunchKernel points to: the ctypes value, width and all
        ptrs, values = real_params(args)
        lib.values.update({ctypes.addressof(v): v for v in values})
        return ptrs, values

    cd._primary.cache_clear()  # the context is retained once a process: retain the fake's
    patch(cd, "_lib", lambda: lib)
    patch(cd, "_MODULES", {})
    patch(cd, "kernel_params", recording_params)
    patch(probe, "device_arch", lambda: "sm_90")
    patch(rc, "build", lambda spec, arch, dt=None: SimpleNamespace(cubin=Path(f"/fake/{spec.name}.{arch}.cubin")))
    return lib
