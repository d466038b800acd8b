"""Spread long tests through the collection, so that pytest-xdist's scheduling hands them to many workers.

xdist's default ``--dist load`` first sends each worker a run of consecutive tests (a quarter of its share) and
later refills idle workers with consecutive runs too. A module of long tests collected next to each other (the
detection matrix: whole batteries and compute-sanitizer runs, 10-40 s each on a GPU) therefore lands on one or
two workers and runs one after another while the others idle: on one H200 its 64 tests took 73 s with 16
workers when collected alone and over 170 s at the end of a full `pytest -n auto suites` run
(docs/gpu-runs/2026-12-01-fourth.md). Tests marked ``verifier_spread`` are placed at even intervals through the
collection instead, from the start (long tests first in every run of consecutive tests). The order is a pure
function of the collection, so every xdist worker computes the same one, as xdist requires.
"""
from __future__ import annotations

MARKER = "verifier_spread"
DOC = "a long test: placed at even intervals through the collection so that xdist gives such tests to many workers"


def spread(items: list) -> None:
    """Reorder ``items`` in place: marked tests at positions floor(k * n / h), k = 0..h-1, the others in their
    collection order in between; both groups keep their relative order."""
    marked = [it for it in items if it.get_closest_marker(MARKER) is not None]
    n, h = len(items), len(marked)
    if h == 0 or h == n:
        return
    rest = iter([it for it in items if it.get_closest_marker(MARKER) is None])
    slots = {k * n // h for k in range(h)}
    heavy = iter(marked)
    items[:] = [next(heavy) if i in slots else next(rest) for i in range(n)]
