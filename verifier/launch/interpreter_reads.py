"""Reads of a Triton kernel in the interpreter that land in an input's or output's guard bands (the 4 KiB the harness
lays before and after every tensor, verifier.launch.harness): a load outside the tensor, which on a GPU reads whatever
lies there or faults at a page's end, and which compute-sanitizer's memcheck reports there.

The guards hold the dtype's largest finite value, so most such reads change the result and fail the value check; a
read whose value the kernel then discards does not (FlagGems' cross entropy loads the label's logit of an ignored row
at x[row·C - 100] and multiplies it by 0: on row 0 that is 400 bytes before x). Only the guard bands are watched: a
launcher's own scratch tensors lie elsewhere and are read legitimately.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import numpy as np

_bands: Optional[list] = None  # [(tensor, side, lo, hi)] of the launch being watched; None: none
_hits: Optional[dict] = None  # tensor -> [reads, (side, bytes from the tensor's edge) of the first]
_wrapped = False


@contextlib.contextmanager
def guard_reads(bands: list) -> Iterator[dict]:
    """Inside the block, every interpreted load is checked against ``bands`` — (tensor name, "before" / "after",
    first byte, byte past the last) of each guard band; yields tensor -> [reads, (side, distance) of the first]."""
    global _bands, _hits
    _wrap()
    before = (_bands, _hits)
    _bands, _hits = list(bands), {}
    try:
        yield _hits
    finally:
        _bands, _hits = before


def bands_of(name: str, base: int, nbytes: int, start: int, end: int) -> list:
    """The two guard bands of a buffer of ``nbytes`` at address ``base`` whose tensor spans bytes [start, end)."""
    return [(name, "before", base, base + start), (name, "after", base + end, base + nbytes)]


def _wrap() -> None:
    global _wrapped
    if _wrapped:
        return
    import triton.runtime.interpreter as interp

    orig = interp.InterpreterBuilder.create_masked_load

    def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
        if _bands:
            _check(np.asarray(ptrs.data), np.asarray(mask.data) if mask is not None else None, ptrs)
        return orig(self, ptrs, mask, other, *args, **kwargs)

    interp.InterpreterBuilder.create_masked_load = create_masked_load
    _wrapped = True


def _check(addresses: np.ndarray, mask, ptrs) -> None:
    try:
        from triton.runtime.interpreter import _get_np_dtype

        size = np.dtype(_get_np_dtype(ptrs.get_element_ty())).itemsize
    except Exception:  # noqa: BLE001 - an element type this release names otherwise: one byte is still a read
        size = 1
    a = addresses.astype(np.uint64, copy=False)
    if mask is not None:
        a = a[np.broadcast_to(mask, a.shape).astype(bool)]
    if not a.size:
        return
    for name, side, lo, hi in _bands:
        inside = (a < np.uint64(hi)) & (a + np.uint64(size) > np.uint64(lo))
        if not inside.any():
            continue
        first = int(a[inside][0])
        distance = (lo + (hi - lo) - first) if side == "before" else first - lo  # bytes from the tensor's edge
        entry = _hits.setdefault(name, [0, (side, distance)])
        entry[0] += int(inside.sum())
