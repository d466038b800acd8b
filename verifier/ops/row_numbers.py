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
def judged_rows(rows):
    """Inside the block a batch of len(rows) rows is rows ``rows`` of a larger one."""
    token = _ROWS.set(np.asarray(rows, dtype=np.int64).reshape(-1))
    try:
        yield
    finally:
        _ROWS.reset(token)


def row_numbers(M: int) -> np.ndarray:
    """The real numbers of a batch's M rows: the judged rows inside judged_rows() (a batch of that many rows), else
    0..M-1."""
    rows: Optional[np.ndarray] = _ROWS.get()
    return rows if rows is not None and len(rows) == M else np.arange(M)
