"""Memory layouts of a case: where the harness (verifier.launch.harness) puts each tensor, and the large-index case.

What PyTorch callers pass besides fresh contiguous tensors, each a catalogue case of its own:

- ``strided``: every 2-D tensor (x, residual, y) has its rows ``N + ROW_PAD`` elements apart, as a slice
  ``qkv[:, :N]`` of a wider buffer lays them out. The gaps of an input hold ``gap_value`` (the dtype's largest
  value: read into a softmax max, a sum of squares or a sum, it changes the row's result), the gaps of an output
  hold the poison and must keep it. A CUDA launch receives the stride it names (``"x.stride"``); a tensor whose
  stride no launch passes stays contiguous. A Triton kernel or a callable get every 2-D tensor strided. Each
  strided tensor, whatever the kernel's kind, has a stride of its own (:func:`row_pad`: x's N + ROW_PAD, the op's
  next tensor's N + 2·ROW_PAD, ...): a fresh output beside a sliced input does not share its stride, and a kernel
  indexing y or the residual with x's stride reads or writes the wrong rows. An output written over an input
  (``outputs_alias``, an in-out tensor) is one buffer: one stride, the output's.
- ``unaligned``: every tensor starts one element past a 16-byte boundary (element-aligned, as a view into a
  larger buffer can start), so 16-byte vector loads chosen from N alone fault with "misaligned address".
- ``large``: M·N ≥ 2^31 + 2N elements, so a 32-bit row offset (``int base = row * N``) wraps inside the array
  (and its siblings: past 2^32 elements, where an unsigned 32-bit product wraps; more than 65,535 rows, the grid's
  y / z limit; rows 2^31 elements apart). The arrays are :class:`SparseRows`: a short random pattern repeated
  down the array, with the judged rows (both sides of the wrap, the first and the last rows) drawn on their own,
  so they never go through the host whole; only the judged rows are downloaded and judged (the reference for
  those rows only). On the GPU the pattern lies on one small physical allocation mapped many times into the
  tensor's virtual range and each judged row on private pages of its own (verifier.gpu.aliasing).

The wrap is a parameter (``Layout.wrap``) so a unit test can simulate a small one on a CPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

CONTIGUOUS, STRIDED, UNALIGNED, LARGE = "contiguous", "strided", "unaligned", "large"
KINDS = (CONTIGUOUS, STRIDED, UNALIGNED, LARGE)
ROW_PAD = 64  # elements between two rows of the strided case (a multiple of 16 bytes in every dtype)
ALIGN = 16  # bytes: the unaligned case starts each tensor one element past a multiple of this
WRAP = 2 ** 31  # elements: where a signed 32-bit index wraps
LARGE_N = (152064, 65536, 16384, 8192, 4096, 1024)  # row lengths of the large case, longest first
# at ci: rows up to 16384 (the judged rows' reference is most of the case's time: 0.07 s at 16384 against 0.5-0.9 s
# at 152064 on an H200, docs/gpu-runs/2026-12-04-issue-36-large.md); long rows stay in vocab_152064 and thorough
LARGE_N_CI = (16384, 8192, 4096, 1024)
TAIL_ROWS = 64  # rows past the one holding element WRAP
PATTERN = 1 << 14  # elements of the random pattern repeated down a large array (a power of two: it divides a chunk)
GRID_Y = 65535  # the grid's y and z limit: rows launched on grid.y past it do not launch


@dataclass(frozen=True)
class Layout:
    """How a case lays its tensors out (``kind`` one of KINDS); ``wrap``: the large case's index wrap."""

    kind: str = CONTIGUOUS
    wrap: int = WRAP
    stride: Optional[int] = None  # large case: elements between two rows (None: N, contiguous)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown layout {self.kind!r}; one of {KINDS}")

    @property
    def large(self) -> bool:
        return self.kind == LARGE


DEFAULT = Layout()


def row_pad(op, name: str) -> int:
    """Elements past N between two rows of tensor ``name`` in the strided case (every kind of kernel): ROW_PAD for
    x, one more ROW_PAD for each tensor the op lists before ``name`` (inputs, then outputs), so a kernel taking one
    tensor's stride for another (aiter's per-token quant stores its output at x's stride, its fused add + RMSNorm
    reads the residual at x's; a CUDA kernel writing y at the x stride its launch passes) is caught
    (tests/test_strided_own_stride.py, tests/test_cuda_own_stride.py)."""
    order = list(dict.fromkeys(["x"] + list(op.inputs) + list(op.outputs)))
    return ROW_PAD * (1 + order.index(name)) if name in order else ROW_PAD


def gap_value(dtype):
    """What the gaps between an input's rows hold in the strided case: the dtype's largest finite value, which
    changes the result of any row it is read into (max, sum of squares, sum); an int for integer dtypes."""
    from verifier import dtypes as _dt

    if _dt.is_float(dtype):
        return float(_dt.finfo(dtype).max)
    return int(np.iinfo(_dt.numpy_dtype(dtype)).max)


def misalign_elements(itemsize: int, address: int) -> int:
    """Elements to add to ``address`` (element-aligned) so that it lies one element past a 16-byte boundary."""
    if address % itemsize:
        raise ValueError(f"address {address:#x} is not aligned to its {itemsize}-byte elements")
    want = itemsize % ALIGN
    return ((want - address) % ALIGN) // itemsize


# ------------------------------------------------------------------------------------------ the large case

def wrap_row(N: int, wrap: int = WRAP, stride: Optional[int] = None) -> int:
    """The first row holding an element at index >= ``wrap`` (its offset row*stride may still be below it)."""
    return wrap // (stride or N)


def large_rows(N: int, wrap: int = WRAP) -> int:
    """M of the large case at row length N: the wrap row plus TAIL_ROWS, so M·N ≥ wrap + 2N."""
    return wrap_row(N, wrap) + TAIL_ROWS


def judged_rows(M: int, N: int, wrap: int = WRAP, stride: Optional[int] = None) -> np.ndarray:
    """The rows of a large case that are downloaded and judged: the first, the last one wholly below ``wrap``, the
    one holding element ``wrap``, the first wholly past it, and the last two (6 rows of 152064: the reference of
    more would cost the case its time)."""
    w = wrap_row(N, wrap, stride)
    rows = {0, w - 1, w, w + 1, M - 2, M - 1}
    return np.array(sorted(r for r in rows if 0 <= r < M), dtype=np.int64)


def _power(v: int) -> str:
    exp = int(np.log2(v)) if v > 0 and v & (v - 1) == 0 else None
    return f"2^{exp}" if exp else str(v)


def wrap_words(M: int, N: int, wrap: int = WRAP, stride: Optional[int] = None) -> str:
    """What a finding of the large case adds: where the wrap lies and what it suggests."""
    w = wrap_row(N, wrap, stride)
    rows = judged_rows(M, N, wrap, stride).tolist()
    if stride:
        return (f"rows {stride} elements apart (row stride >= 2^31): a 32-bit stride * row product? ({M}x{N}; "
                f"judged rows {rows})")
    if wrap == GRID_Y * N:
        return (f"more than {GRID_Y} rows: rows launched on grid.y / grid.z (limit {GRID_Y})? (row {w} of {M}x{N}; "
                f"judged rows {rows})")
    at = _power(wrap)
    what = "an unsigned 32-bit offset" if wrap >= 2 ** 32 else "a 32-bit index"
    return (f"row offset crosses {at}: {what}? (element {at} lies in row {w} of {M}x{N}; judged rows "
            f"{rows})")


class SparseRows:
    """An (M, N) array held as rows: ``rows`` (row -> values) and, for every other row r, the elements of the flat
    ``pattern`` repeated down the array from element 0 with rows ``stride`` elements apart (None: only ``rows``
    are known, as for a large run's downloaded outputs). Indexing with row numbers gives a plain array of those
    rows; :meth:`held` every value the array holds (what a contract's NaN / inf test reads)."""

    def __init__(self, shape, dtype, rows: dict, pattern: Optional[np.ndarray] = None, stride: Optional[int] = None):
        self.shape = tuple(int(v) for v in shape)
        self.dtype = np.dtype(dtype)
        self.rows = {int(r): np.asarray(v) for r, v in rows.items()}
        self.pattern = None if pattern is None else np.asarray(pattern).reshape(-1)
        if len(self.shape) != 2:
            raise ValueError(f"SparseRows holds (M, N) arrays, not {self.shape}")
        self.stride = int(stride) if stride is not None else self.shape[1]

    ndim = 2

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def span(self) -> int:
        """Elements from the first row's start to the last row's end (rows ``stride`` apart)."""
        return (self.shape[0] - 1) * self.stride + self.shape[1] if self.shape[0] else 0

    def row(self, r: int) -> np.ndarray:
        if r in self.rows:
            return self.rows[r]
        if self.pattern is None or not 0 <= r < self.shape[0]:
            raise IndexError(f"row {r} of a sparse {self.shape[0]}x{self.shape[1]} array is not held")
        return self.pattern[(r * self.stride + np.arange(self.shape[1])) % len(self.pattern)]

    def __getitem__(self, idx) -> np.ndarray:
        if np.ndim(idx) == 0:
            return self.row(int(idx))
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        return np.stack([self.row(int(r)) for r in idx]).astype(self.dtype, copy=False) if len(idx) else \
            np.empty((0, self.shape[1]), dtype=self.dtype)

    def held(self) -> np.ndarray:
        parts = ([self.pattern] if self.pattern is not None else []) + [v.reshape(-1) for v in self.rows.values()]
        return np.concatenate(parts) if parts else np.empty((0,), dtype=self.dtype)

    def __repr__(self):
        return f"SparseRows({self.shape[0]}x{self.shape[1]} {self.dtype}, {len(self.rows)} rows held)"


def take_rows(v, rows):
    """Rows ``rows`` of an (M, ...) array or SparseRows."""
    return v[np.asarray(rows, dtype=np.int64)]
