"""Aliased device memory through the CUDA virtual memory management API (ctypes over libcuda, as
verifier.gpu.libcuda): one reserved virtual range whose chunks map onto a small shared physical allocation many
times and onto private allocations where a plan (verifier.gpu.aliasing) says, so a tensor of more than 2^32
elements costs a few megabytes and milliseconds. cuMemAddressReserve / cuMemCreate / cuMemMap / cuMemSetAccess,
the chunk being cuMemGetAllocationGranularity's minimum.

:class:`MappedBuffer` answers what verifier.launch.cuda's DeviceArray and verifier.launch.large ask of a
DeviceBuffer: ``ptr``, ``nbytes``, upload, download, copy_within, fill, close.
"""
from __future__ import annotations

import ctypes

import numpy as np

from verifier.gpu import libcuda as _cd
from verifier.gpu import aliasing as _al

_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102
SHARED_BYTES = 32 << 20  # the shared allocation: 16 chunks of 2 MiB (fewer mappings), inside the L2


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


def _prop() -> _Prop:
    p = _Prop()
    p.type = _CU_MEM_ALLOCATION_TYPE_PINNED
    p.location = _Location(_CU_MEM_LOCATION_TYPE_DEVICE, 0)
    return p


def supported() -> bool:
    """Whether device 0 supports the virtual memory management API."""
    _cd.context()
    v = ctypes.c_int()
    code = _cd._lib().cuDeviceGetAttribute(ctypes.byref(v), _CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0)
    return code == 0 and v.value == 1


def granularity() -> int:
    """The minimum allocation granularity of device 0 (2 MiB on current GPUs): the chunk of a plan."""
    _cd.context()
    g = ctypes.c_size_t()
    _cd._check(_cd._lib().cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(_prop()), 0),
               "cuMemGetAllocationGranularity")
    return int(g.value)


def shared_chunks(chunk: int) -> int:
    return max(1, -(-SHARED_BYTES // chunk))


class MappedBuffer(_cd.DeviceBuffer):
    """A reserved range mapped as ``plan`` says (verifier.gpu.aliasing.Plan), each piece onto a whole physical
    allocation; fill_physical writes a pattern into each allocation once."""

    def __init__(self, plan: _al.Plan):  # noqa: the base's __init__ allocates: not called
        _cd.context()
        self.plan, self.ptr, self.nbytes = plan, 0, plan.nbytes
        self._handles, self._maps, self._reserved = [], [], []
        try:
            self.ptr = self._reserve(plan.nbytes)
            phys = {_al.SHARED: self._create(plan.shared_chunks * plan.chunk),
                    _al.SHARED_ONE: self._create(plan.chunk)}
            phys.update({i: self._create(n * plan.chunk) for i, n in enumerate(plan.private)})
            for p in plan.pieces:  # a whole allocation each: cuMemMap's offset must be 0
                self._map(self.ptr + p.first * plan.chunk, p.chunks * plan.chunk, phys[p.phys])
            self._access(self.ptr, plan.nbytes)
        except Exception:
            self.close()
            raise

    def _reserve(self, n: int) -> int:
        ptr = ctypes.c_uint64()
        _cd._check(_cd._lib().cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(n), ctypes.c_size_t(0),
                                                  ctypes.c_uint64(0), ctypes.c_uint64(0)),
                   f"cuMemAddressReserve({n})")
        self._reserved.append((ptr.value, n))
        return ptr.value

    def _create(self, n: int) -> int:
        h = ctypes.c_uint64()
        _cd._check(_cd._lib().cuMemCreate(ctypes.byref(h), ctypes.c_size_t(n), ctypes.byref(_prop()),
                                          ctypes.c_uint64(0)), f"cuMemCreate({n})")
        self._handles.append(h.value)
        return h.value

    def _map(self, ptr: int, n: int, handle: int) -> None:
        _cd._check(_cd._lib().cuMemMap(ctypes.c_uint64(ptr), ctypes.c_size_t(n), ctypes.c_size_t(0),
                                       ctypes.c_uint64(handle), ctypes.c_uint64(0)), f"cuMemMap({n} bytes)")
        self._maps.append((ptr, n))

    def _access(self, ptr: int, n: int) -> None:
        desc = _Access(_Location(_CU_MEM_LOCATION_TYPE_DEVICE, 0), _CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        _cd._check(_cd._lib().cuMemSetAccess(ctypes.c_uint64(ptr), ctypes.c_size_t(n), ctypes.byref(desc),
                                             ctypes.c_size_t(1)), "cuMemSetAccess")

    def _fill_at(self, ptr: int, pattern: np.ndarray, nbytes: int) -> None:
        """``pattern`` repeated over ``nbytes`` at device address ``ptr``: one upload, then doubling copies."""
        p = np.ascontiguousarray(pattern).reshape(-1).view(np.uint8)
        done = min(p.nbytes, nbytes)
        lib = _cd._lib()
        _cd._check(lib.cuMemcpyHtoD_v2(ctypes.c_uint64(ptr), p.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(done)),
                   "cuMemcpyHtoD")
        while done < nbytes:
            step = min(done, nbytes - done)
            _cd._check(lib.cuMemcpyDtoD_v2(ctypes.c_uint64(ptr + done), ctypes.c_uint64(ptr), ctypes.c_size_t(step)),
                       "cuMemcpyDtoD")
            done += step

    def fill_physical(self, pattern: np.ndarray, phase: int = 0) -> None:
        """Every physical byte of the range holds the byte ``pattern`` has at its place in the range: byte b (from
        the range's start) holds pattern[(b - phase) mod len]. The pattern's length must divide the chunk."""
        p = np.ascontiguousarray(pattern).reshape(-1).view(np.uint8)
        if self.plan.chunk % p.nbytes:
            raise ValueError(f"a {p.nbytes}-byte pattern does not divide the {self.plan.chunk}-byte chunk")
        rolled = np.roll(p, phase % p.nbytes)  # byte 0 of every chunk holds pattern[-phase]
        first = {}
        for piece in self.plan.pieces:  # each allocation once, through the first place it is mapped
            first.setdefault(piece.phys, piece)
        for piece in first.values():
            self._fill_at(self.ptr + piece.first * self.plan.chunk, rolled, piece.chunks * self.plan.chunk)

    def close(self) -> None:
        lib = _cd._lib()
        for ptr, n in reversed(self._maps):
            lib.cuMemUnmap(ctypes.c_uint64(ptr), ctypes.c_size_t(n))
        for h in self._handles:
            lib.cuMemRelease(ctypes.c_uint64(h))
        for ptr, n in self._reserved:
            lib.cuMemAddressFree(ctypes.c_uint64(ptr), ctypes.c_size_t(n))
        self._maps, self._handles, self._reserved, self.ptr = [], [], [], 0
