"""What one run under the harness gives, shared by its two bodies (verifier.launch.harness for every case,
verifier.launch.large for the large-index one): the guard size and the two poisons per dtype, the kernel-fault
boundary (KernelFault), and the Outcome of a run (outputs, unwritten elements, changed guard bytes and gaps).
verifier.launch.harness's docstring says how the poisons and guards are judged."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from verifier import dtypes as _dt

GUARD_BYTES = 4096

# Two poison bit patterns per dtype (stored as the same-width signed int).
POISON = {
    "float64": (0x7FF4DEADBEEF0001, 0x7FF5A5A5A5A5A5A5),
    "float32": (0x7FA1B2C3, 0x7FD4E5F6),
    "float16": (0x7E5A, 0x7D3C),
    "bfloat16": (0x7FA5, 0x7FB3),
    "float8_e4m3fn": (0x7F, 0xFF),  # its only two NaNs (no infinities)
    "float8_e5m2": (0x7E, 0xFD),
    "int8": (0x5A, 0x3C),
    "int32": (0x5A5A5A5A, 0x3C3C3C3C),
    "int64": (0x5A5A5A5A5A5A5A5A, 0x3C3C3C3C3C3C3C3C),
}
INT_VIEW = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


class KernelFault(Exception):
    """The kernel itself raised (a Python exception from a callable or launcher, or a CUDA error after a
    launch). Distinguishes the kernel's failure, a finding, from a bug in the verifier, an internal error.
    ``cuda`` is True when the CUDA context is unusable afterwards, so nothing more can run in this process."""

    def __init__(self, original: BaseException):
        self.original = original
        self.cuda = is_cuda_fault(original)
        super().__init__(f"{type(original).__name__}: {original}")


def is_cuda_fault(e: BaseException) -> bool:
    if getattr(e, "launch_refused", False):  # a launch refused before it ran (sparse_grid.GridLimit): context intact
        return False
    text = f"{type(e).__module__}.{type(e).__name__}: {e}"
    return any(k in text for k in ("CUDARuntimeError", "CUDADriverError", "CUDA error", "cudaError", "CUDA_ERROR"))


@dataclass
class Outcome:
    outputs: dict  # name -> numpy array in the output dtype (bit-exact); large case: SparseRows of the judged rows
    unwritten: dict = field(default_factory=dict)  # name -> bool mask (only where some are unwritten); large: Unwritten
    guard_hits: dict = field(default_factory=dict)  # name -> list of (side, byte offset) of changed guard bytes
    gap_hits: dict = field(default_factory=dict)  # name -> (count, where the first lies) of changed gap elements
    # (the strided case's gaps, a declared output layout's padding)
    rows: object = None  # the large case's judged rows (None: every row is in ``outputs``)
    clobbered: dict = field(default_factory=dict)  # input -> what the call changed in it (verifier.launch.harness)
    unchanged: dict = field(default_factory=dict)  # output written over an input -> mask of elements that kept
    # the input's bits (unwritten, unless the result rounds to the input: verifier.battery.values decides)
    guard_reads: dict = field(default_factory=dict)  # tensor -> [reads, (side, bytes from its edge) of the first]
    # in its guard bands (the Triton interpreter's loads: verifier.launch.interpreter_reads)


@dataclass
class Unwritten:
    """Unwritten elements of an output too large for a mask (the large case): how many, of how many, where the
    first is ('first in row 14122')."""

    count: int
    size: int
    where: str


def unwritten_summary(v) -> tuple:
    """(count, size, where the first is) of an Outcome.unwritten entry: a bool mask or an Unwritten."""
    if isinstance(v, Unwritten):
        return v.count, v.size, v.where
    idx = np.argwhere(v)
    return len(idx), int(v.size), f"first at index {tuple(int(i) for i in idx[0])}"


def signed(bits: int, nbytes: int) -> int:
    lim = 1 << (8 * nbytes)
    return bits - lim if bits >= lim // 2 else bits


def out_dtype(name: str, op, dt, params=None) -> str:
    """An output's dtype (verifier.ops.model.Op.output_dtype): a declared one (an index output's int32, a scale's
    float32, or the dtype a param names under the kernel's ``params``), in-out tensors (residual) the input dtype,
    everything else the variant's output dtype."""
    return op.output_dtype(name, dt, params)


def confirmed_unwritten(name, c, first, second, rows, op, dt, params, M: int, N: int) -> np.ndarray:
    """Per-row counts of ``name``'s unwritten elements, element by element on the judged rows (both runs downloaded
    them): an element is unwritten where it holds the first poison after the first run and the second after the
    second. Counted per row only, a row of an integer output legitimately holding both poisons' values (an int8 row of
    16384 values holds some 90s and some 60s) read as unwritten."""
    if len(op.shape_of(name, M, N, params)) != 2 or name not in first.outputs or name not in second.outputs:
        return c
    dtype = out_dtype(name, op, dt, params)
    size = np.dtype(_dt.numpy_dtype(dtype)).itemsize
    ints = np.dtype(INT_VIEW[size])
    p1, p2 = (signed(POISON[dtype][i], size) for i in (0, 1))
    c = np.array(c, copy=True)
    for r in rows.tolist():
        if r < len(c) and c[r]:
            a = np.ascontiguousarray(first.outputs[name].row(r)).view(ints)
            b = np.ascontiguousarray(second.outputs[name].row(r)).view(ints)
            c[r] = int(((a == p1) & (b == p2)).sum())
    return c
