"""The large family of cases (issue #36; levels ``ci`` and ``thorough`` by the level table's ``large_index`` column,
any level by ``--case``; on a CPU Triton kernels only, as its ``large_on_cpu`` columns say): more than 2^31 elements (``large_index_2pow31``: a 32-bit row
offset wraps), more than 2^32 (``large_index_2pow32``: an unsigned one does), more than 65,535 rows
(``rows_past_65535``: the grid's y / z limit) and rows 2^31 + 64 elements apart (``row_stride_2pow31``). Their
2-D inputs are SparseRows (verifier.inputs.layouts); they live on aliased pages (verifier.launch.large: device
memory, or host memory for the Triton interpreter). verifier.inputs.cases picks each kernel's row length and appends them to the catalogue.
"""
from __future__ import annotations

from verifier.inputs import layouts as _lay
from verifier.inputs.catalogue import Case, sparse_maker

LARGE_CASE, LARGE_2POW32 = "large_index_2pow31", "large_index_2pow32"
ROWS_PAST_GRID_Y, ROW_STRIDE_2POW31 = "rows_past_65535", "row_stride_2pow31"
LARGE_CASES = (LARGE_CASE, LARGE_2POW32, ROWS_PAST_GRID_Y, ROW_STRIDE_2POW31)  # level columns large_index, large_on_cpu
ROWS_N = (1024, 4096, 8192, 16384, 65536, 152064)  # row lengths of the last two, shortest first
STRIDE_ROWS = 4  # rows of row_stride_2pow31: all judged


def _large(name, exposes, M, N, wrap, stride=None) -> Case:
    return Case(name, exposes + " (aliased pages, the judged rows private)", M, N, sparse_maker(M, N, wrap, stride),
                layout=_lay.Layout(_lay.LARGE, wrap, stride))


def large_case(N: int = _lay.LARGE_N[0], wrap: int = _lay.WRAP, name: str = LARGE_CASE) -> Case:
    """M = wrap // N + TAIL_ROWS rows of N (M·N ≥ wrap + 2N): ``large_index_2pow31``, or ``large_index_2pow32`` with
    ``wrap`` 2^32. verifier.inputs.cases picks N per kernel: the longest of LARGE_N (LARGE_N_CI) it supports."""
    M, big = _lay.large_rows(N, wrap), wrap == 2 ** 32
    what = "an unsigned 32-bit row offset (unsigned row * N)" if big else "a 32-bit row offset (int row * N)"
    return _large(name, f"M·N ≥ 2^{32 if big else 31} + 2N elements ({M}x{N}): {what} wraps; judged on the rows on "
                        "both sides of the wrap and the last rows", M, N, wrap)


def rows_case(N: int = ROWS_N[0], name: str = ROWS_PAST_GRID_Y) -> Case:
    """GRID_Y + 1 + TAIL_ROWS rows of N: rows launched on grid.y or grid.z (limit 65,535) do not launch."""
    M = _lay.GRID_Y + 1 + _lay.TAIL_ROWS
    return _large(name, f"{M} rows of {N}: more than {_lay.GRID_Y} rows, the grid's y / z limit; judged around row "
                        f"{_lay.GRID_Y} and the last rows", M, N, _lay.GRID_Y * N)


def stride_case(N: int = ROWS_N[0], name: str = ROW_STRIDE_2POW31) -> Case:
    """STRIDE_ROWS rows 2^31 + ROW_PAD elements apart (the tensors whose stride the kernel takes; the others stay
    contiguous): a stride kept in 32 bits, or ``row * stride`` in int, wraps."""
    stride = _lay.WRAP + _lay.ROW_PAD
    return _large(name, f"{STRIDE_ROWS} rows of {N}, {stride} elements apart: a 32-bit stride or stride * row "
                        "wraps; every row judged", STRIDE_ROWS, N, _lay.WRAP, stride)


def large_cases(level: str = "thorough") -> list:
    """The large family at the level's default row lengths (verifier.inputs.cases picks each kernel's)."""
    n = (_lay.LARGE_N_CI if level == "ci" else _lay.LARGE_N)[0]
    return [large_case(n), large_case(n, 2 ** 32, LARGE_2POW32), rows_case(), stride_case()]
