"""Aliased host memory: the plan of an aliased range (verifier.gpu.aliasing, the same arithmetic as on the GPU)
mapped in the process's own address space, for the large cases of Triton kernels in the interpreter on a CPU.

One reserved range (``mmap`` PROT_NONE) whose chunks are re-mapped (MAP_FIXED | MAP_SHARED) onto memory files
(``memfd_create``): the shared file many times, the one-chunk file, and a private file per private piece (judged
rows, guard bands), each piece mapping its file whole as cuMemMap maps a whole allocation. So a tensor of 2^32
elements costs a few tens of megabytes of host memory and milliseconds, a write through one mapping of a file
reads back through every other, and a private chunk holds only its own data.

Around the plan's range lie two *aprons* of ``APRON_ELEMENTS`` elements each, mapped onto the shared file too: a
signed 32-bit element offset reaches at most 2^31 elements before or after a tensor's start, so a kernel whose
offset wraps reads the shared pattern there and writes where nothing is judged (its judged row stays unwritten:
the finding), where the interpreter would otherwise read an unmapped address and kill the process (the
interpreter's loads and stores are raw memory accesses). On the GPU that memory is whatever else is mapped there.

:class:`HostMappedBuffer` answers what verifier.launch.large's _Mapped asks of a buffer: ``ptr``, ``nbytes``,
upload, download, fill_physical, close (verifier.gpu.vmm.MappedBuffer's interface).
"""
from __future__ import annotations

import ctypes
import os
import sys

import numpy as np

from verifier.gpu import aliasing as _al

CHUNK = 256 << 10  # bytes per chunk: a page multiple that every pattern (16384 elements of up to 8 bytes) divides
SHARED_BYTES = 16 << 20  # the shared file: fewer mappings per range (a 16 GiB tensor maps it 1024 times)
APRON_ELEMENTS = 2 ** 31  # how far a signed 32-bit element offset reaches on either side of a tensor's start
MAX_MAPPINGS = 16384  # per buffer; the kernel's limit (vm.max_map_count, 65530 by default) is per process

_PROT_NONE, _PROT_RW = 0x0, 0x1 | 0x2
_MAP_SHARED, _MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS, _MAP_NORESERVE = 0x01, 0x02, 0x10, 0x20, 0x4000
_FAILED = ctypes.c_void_p(-1).value


def supported() -> bool:
    """Whether this host can map aliased ranges: Linux with memfd_create (Python's os.memfd_create)."""
    return sys.platform.startswith("linux") and hasattr(os, "memfd_create")


def unsupported_reason() -> str:
    return f"needs memfd_create and mmap (Linux) to alias host memory; this host is {sys.platform}"


def shared_chunks(chunk: int = CHUNK) -> int:
    return max(1, -(-SHARED_BYTES // chunk))


_libc = None


def _lib():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                             ctypes.c_long]
        lib.munmap.restype = ctypes.c_int
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc = lib
    return _libc


def _mmap(addr: int, n: int, prot: int, flags: int, fd: int) -> int:
    got = _lib().mmap(ctypes.c_void_p(addr or None), ctypes.c_size_t(n), prot, flags, fd, 0)
    if got is None or got == _FAILED or (flags & _MAP_FIXED and got != addr):
        err = ctypes.get_errno()
        raise OSError(err, f"mmap({n} bytes) failed: {os.strerror(err)}")
    return got


class HostMappedBuffer:
    """A reserved host range mapped as ``plan`` says (verifier.gpu.aliasing.Plan), with ``apron`` bytes before and
    after it mapped onto the shared file; ``ptr`` is the plan's byte 0."""

    def __init__(self, plan: _al.Plan, apron: int = 0):
        if not supported():
            raise OSError(unsupported_reason())
        self.plan, self.nbytes, self.ptr = plan, plan.nbytes, 0
        self._fds, self._base, self._size = [], 0, 0
        run = plan.shared_chunks * plan.chunk
        self.apron = -(-int(apron) // run) * run  # whole runs of the shared file
        pieces = len(plan.pieces) + 2 * (self.apron // run)
        if pieces > MAX_MAPPINGS:
            raise ValueError(f"a {plan.nbytes}-byte range in {plan.chunk}-byte chunks needs {pieces} mappings "
                             f"(at most {MAX_MAPPINGS})")
        try:
            self._size = plan.nbytes + 2 * self.apron
            self._base = _mmap(0, self._size, _PROT_NONE, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1)
            self.ptr = self._base + self.apron
            files = {_al.SHARED: self._file(run), _al.SHARED_ONE: self._file(plan.chunk)}
            files.update({i: self._file(n * plan.chunk) for i, n in enumerate(plan.private)})
            for p in plan.pieces:  # a whole file each, as cuMemMap maps a whole allocation
                self._map(self.ptr + p.first * plan.chunk, p.chunks * plan.chunk, files[p.phys])
            for start in (self._base, self.ptr + plan.nbytes):
                for off in range(0, self.apron, run):
                    self._map(start + off, run, files[_al.SHARED])
        except Exception:
            self.close()
            raise

    def _file(self, n: int) -> int:
        fd = os.memfd_create("verifier-alias", getattr(os, "MFD_CLOEXEC", 1))
        self._fds.append(fd)
        os.ftruncate(fd, n)
        return fd

    def _map(self, addr: int, n: int, fd: int) -> None:
        _mmap(addr, n, _PROT_RW, _MAP_SHARED | _MAP_FIXED, fd)

    def _bytes(self, offset: int, n: int) -> np.ndarray:
        """A uint8 view of bytes [offset, offset + n) of the plan's range (no copy)."""
        if offset < -self.apron or offset + n > self.nbytes + self.apron or n < 0:
            raise ValueError(f"{n} bytes at {offset} asked of a {self.nbytes}-byte range")
        if n == 0:
            return np.empty(0, dtype=np.uint8)
        return np.frombuffer((ctypes.c_uint8 * n).from_address(self.ptr + offset), dtype=np.uint8)

    def upload(self, arr: np.ndarray, offset: int = 0) -> None:
        a = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        self._bytes(offset, a.nbytes)[:] = a

    def download(self, dtype, shape, offset: int = 0) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        out.reshape(-1).view(np.uint8)[:] = self._bytes(offset, out.nbytes)
        return out

    def fill_physical(self, pattern: np.ndarray, phase: int = 0) -> None:
        """Every physical byte of the range holds the byte ``pattern`` has at its place in the range: byte b (from
        the range's start) holds pattern[(b - phase) mod len] (verifier.gpu.vmm.MappedBuffer.fill_physical)."""
        p = np.ascontiguousarray(pattern).reshape(-1).view(np.uint8)
        if self.plan.chunk % p.nbytes:
            raise ValueError(f"a {p.nbytes}-byte pattern does not divide the {self.plan.chunk}-byte chunk")
        rolled = np.roll(p, phase % p.nbytes)
        first = {}
        for piece in self.plan.pieces:  # each file once, through the first place it is mapped
            first.setdefault(piece.phys, piece)
        for piece in first.values():
            n = piece.chunks * self.plan.chunk
            self._bytes(piece.first * self.plan.chunk, n).reshape(-1, p.nbytes)[:] = rolled

    def torch_view(self, offset: int, shape, stride: int, torch_dtype, itemsize: int):
        """A CPU torch tensor over the range: ``shape`` (M, N) from byte ``offset``, rows ``stride`` elements apart
        (no copy; valid until close())."""
        import torch

        M, N = shape
        n = ((M - 1) * stride + N) * itemsize if M else 0
        flat = torch.frombuffer((ctypes.c_uint8 * max(n, 1)).from_address(self.ptr + offset), dtype=torch.uint8)
        return flat[:n].view(torch_dtype).as_strided(tuple(shape), (stride, 1))

    def close(self) -> None:
        if self._base:
            _lib().munmap(ctypes.c_void_p(self._base), ctypes.c_size_t(self._size))
        for fd in self._fds:
            os.close(fd)
        self._fds, self._base, self.ptr = [], 0, 0

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
