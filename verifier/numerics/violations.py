"""Violation records of the invariants and the helpers every op's invariant checks share.

An op module (verifier/ops/<op>.py) computes a value and a derived bound per row; ``violation``
turns the rows where the bound breaks into one record naming the worst row.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verifier import dtypes as _dt
from verifier.numerics.ulp import round_to, ulp

U64 = 2.0 ** -53  # float64 arithmetic of the checks themselves


@dataclass(frozen=True, eq=False)
class Violation:
    """One broken invariant. ``rows``: offending row indices; ``score``: worst value / bound."""

    invariant: str
    rows: np.ndarray
    message: str
    score: float = 0.0


def inv1m(g):
    """1/(1 - g), infinite once g >= 1 (the bound it feeds becomes vacuous)."""
    with np.errstate(divide="ignore"):
        return np.where(g < 1, 1.0 / np.maximum(1 - g, 1e-300), np.inf)


def ulp_out(y, c):
    """The output rounding at y: one ulp of the output dtype (1 for integer outputs), times the output ULPs the
    kernel declares (``Ctx.out_ulps``, its tolerance base_ulps)."""
    one = ulp(y, c.out) if _dt.is_float(c.out) else np.where(np.isfinite(y), 1.0, np.nan)
    return one * getattr(c, "out_ulps", 1.0)


def round_out(v, dtype):
    return round_to(v, dtype) if _dt.is_float(dtype) else v


def f64(a) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.asarray(_dt.to_numpy(a), dtype=np.float64)


def violation(name, bad, value, bound, what) -> list[Violation]:
    """A Violation for rows where ``bad``; message names the worst row (largest value/bound)."""
    bad = np.asarray(bad, dtype=bool)
    if not bad.any():
        return []
    rows = np.flatnonzero(bad)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bad, np.abs(value) / np.abs(bound), -np.inf)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    w = int(np.argmax(ratio))
    msg = (f"{len(rows)} of {bad.size} rows violate {what}; worst row {w}: {value[w]:.6g} vs bound "
           f"{bound[w]:.6g} (rows {rows[:8].tolist()}{'...' if len(rows) > 8 else ''})")
    return [Violation(name, rows, msg, float(ratio[w]))]


def finite_violation(name, must_be_finite, y2d, why: str = "their input is finite") -> list[Violation]:
    """Rows that must be finite (per the caller's reasoning, ``why`` in the message) but hold NaN/inf."""
    nonfin = must_be_finite & ~np.isfinite(y2d).all(axis=1)
    if not nonfin.any():
        return []
    rows = np.flatnonzero(nonfin)
    count = (~np.isfinite(y2d[rows])).sum(axis=1)
    w = int(rows[np.argmax(count)])
    msg = (f"{len(rows)} of {len(nonfin)} rows hold NaN/inf although {why}; worst row {w}: "
           f"{int(count.max())} non-finite outputs (rows {rows[:8].tolist()}{'...' if len(rows) > 8 else ''})")
    return [Violation(name, rows, msg, float(count.max()))]


def order_violation(name, rows_ok, x, y, err) -> list[Violation]:
    """x_i < x_j must give y_i <= y_j, up to the elements' error bounds: the exact outputs are
    strictly ordered, and |y - exact| <= err, so a correct y only breaks order when
    y_i - err_i > y_j + err_j is false. Vectorized: sort each row by x, take the prefix max of
    y - err over the earlier *strictly smaller* x groups and compare with y + err."""
    M, N = x.shape
    idx = np.argsort(x, axis=1, kind="stable")
    xs, ys, es = (np.take_along_axis(a, idx, axis=1) for a in (x, y, err))
    new = np.ones((M, N), dtype=bool)
    new[:, 1:] = xs[:, 1:] != xs[:, :-1]
    start = np.maximum.accumulate(np.where(new, np.arange(N), 0), axis=1)  # first index of each x group
    pm = np.maximum.accumulate(ys - es, axis=1)
    prev = np.take_along_axis(pm, np.maximum(start - 1, 0), axis=1)
    prev = np.where(start > 0, prev, -np.inf)
    excess = np.where(rows_ok[:, None], prev - (ys + es), -np.inf)
    j = np.argmax(excess, axis=1)[:, None]
    bad = np.take_along_axis(excess, j, 1)[:, 0] > 0
    value = np.take_along_axis(prev - ys, j, 1)[:, 0]
    bound = np.take_along_axis(es, j, 1)[:, 0]
    return violation(name, bad, value, bound, "order preservation x_i < x_j => y_i <= y_j (value = "
                     "(y_i - err_i) - y_j over the pair breaking it most, bound = err_j)")
