"""The real row numbers of a batch judged in part (a large case judges six rows of 131,136: verifier.judge's
``rows=``), for the semantics that depend on a row's place in the batch (softmax's query index: causal, ALiBi).
Outside :func:`judged_rows` a batch's rows are 0..M-1."""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Optional

import numpy as np

_ROWS: ContextVar = ContextVar("verifier_judged_rows", default=None)


@contextlib.contextmanager
def judged_rows(rows, total: Optional[int] = None):
    """Inside the block a batch of len(rows) rows is rows ``rows`` of a larger one of ``total`` rows."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    token = _ROWS.set((rows, int(total) if total is not None else int(rows.max(initial=-1)) + 1))
    try:
        yield
    finally:
        _ROWS.reset(token)


def row_numbers(M: int) -> np.ndarray:
    """The real numbers of a batch's M rows: the judged rows inside judged_rows() (a batch of that many rows), else
    0..M-1. Public (verifier.spec): a reference whose result depends on a row's place in the batch (a causal mask,
    a head per block of rows) reads it here, as a large case hands it six rows of 131,136."""
    held = _ROWS.get()
    return held[0] if held is not None and len(held[0]) == M else np.arange(M)


def batch_rows(M: int) -> int:
    """The number of rows of the whole batch a reference's M rows come from: the large case's M where it judges
    some rows (judged_rows), else M. Public (verifier.spec)."""
    held = _ROWS.get()
    return held[1] if held is not None and len(held[0]) == M else M
