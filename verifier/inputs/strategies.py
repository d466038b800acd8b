"""Hypothesis strategies for shapes and parameters (the values come from the samplers of
verifier.inputs.catalogue, which re-exports these): edge-biased row counts and lengths, eps values."""
from __future__ import annotations

from verifier.errors import UsageError


def _edges(limit: int) -> list[int]:
    """1, 31, 32, 33, powers of two and their neighbours, up to ``limit``."""
    out = {1, 2, 3, 31, 32, 33}
    p = 4
    while p <= limit + 1:
        out.update((p - 1, p, p + 1))
        p *= 2
    return sorted(v for v in out if 1 <= v <= limit)


def _sizes(limit: int):
    from hypothesis import strategies as st

    if limit < 1:
        raise UsageError(f"size limit {limit} < 1", fix="pass max_rows / max_cols >= 1")
    near4 = st.builds(lambda k, d: min(max(4 * k + d, 1), limit),
                      st.integers(1, max(limit // 4, 1)), st.sampled_from((-1, 1)))
    return st.one_of(st.sampled_from(_edges(limit)), near4, st.integers(1, limit))


def rows(max_rows: int = 64):
    """Row counts M, biased toward 1, 31-33, powers of two ± 1 and multiples of 4 ± 1."""
    return _sizes(max_rows)


def cols(max_cols: int = 4096):
    """Row lengths N, with the same edge bias as :func:`rows`."""
    return _sizes(max_cols)


def shapes(max_rows: int = 64, max_cols: int = 4096):
    """(M, N) shapes with edge-biased M and N: the one shape strategy (the Hypothesis step draws from it).
    Plain integers are the first alternative: Hypothesis shrinks a one_of toward its first branch, so a
    failure shrinks to the smallest failing size, not just the smallest failing edge size (127 for 101)."""
    from hypothesis import strategies as st

    return st.tuples(st.one_of(st.integers(1, max_rows), rows(max_rows)),
                     st.one_of(st.integers(1, max_cols), cols(max_cols)))


def eps_values():
    """eps for the norms: common defaults (1e-5, 1e-6), tiny (1e-12) and large (0.1) ones, and any
    value in between (log-uniform)."""
    from hypothesis import strategies as st

    return st.one_of(st.sampled_from((1e-5, 1e-6, 1e-12, 1e-3, 0.1)),
                     st.floats(-12.0, -1.0).map(lambda e: 10.0 ** e))
