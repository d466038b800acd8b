"""The one run-level table: what each of ``quick``, ``ci`` and ``thorough`` runs.

A run's level is its effort (``--level``; ``--budget`` is the older spelling, still accepted). Every rule that
depends on it is a column here, read where it applies: the catalogue (verifier.inputs.catalogue: which cases,
at which M, whether the large-index case of more than 2^31 elements runs), the Hypothesis step (examples per kernel and dtype, the same in ``verifier check`` and a suite's
``test_<op>_shapes``; 0: the step does not run), the determinism step (runs on one input), the sanitizer
hook (which dtypes a ``--sanitize`` run instruments) and ``--help``. ``thorough`` does more than ``ci`` in every
row. Not to be confused with a per-element ULP *budget* (verifier.judge.tolerance).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from verifier.constants import DEFAULT_LEVEL
from verifier.constants import LEVELS as NAMES
from verifier.errors import UsageError


@dataclass(frozen=True)
class Level:
    name: str
    hypothesis: int  # Hypothesis examples per kernel and dtype (0: the step does not run)
    repeats: int  # runs of the determinism check on one input (at least 2: one comparison)
    quick_cases_only: bool  # the catalogue's handful of quick cases, else every case
    rows: Optional[int]  # M of every catalogue case whose M is not the point (None: each case's own M)
    sanitize_first_dtype_only: bool  # --sanitize instruments the first declared dtype only
    catalogue: str  # what the catalogue column means, for --help
    large_index: bool = False  # the large cases (past 2^31 and 2^32 elements, > 65535 rows; any level runs them by --case)
    # on a CPU (a Triton kernel in the interpreter, verifier.launch.large_host.on_host): the large cases run there and
    # whether on the first declared dtype only (None: all of them, every dtype); the GPU runs every one
    large_on_cpu: Optional[tuple] = None
    large_on_cpu_first_dtype_only: bool = False

    def __post_init__(self):
        if self.repeats < 2:
            raise ValueError(f"level {self.name}: a determinism check needs 2 runs or more")


TABLE = {
    "quick": Level("quick", hypothesis=0, repeats=2, quick_cases_only=True, rows=None,
                   sanitize_first_dtype_only=True, catalogue="a handful of catalogue cases"),
    "ci": Level("ci", hypothesis=12, repeats=3, quick_cases_only=False, rows=None,
                sanitize_first_dtype_only=False, catalogue="every catalogue case at small M", large_index=True,
                large_on_cpu=("large_index_2pow31",), large_on_cpu_first_dtype_only=True),
    "thorough": Level("thorough", hypothesis=60, repeats=5, quick_cases_only=False, rows=16,
                      sanitize_first_dtype_only=False, large_index=True,
                      catalogue="every case at M = 16 rows and m2049_short_rows (2049 rows of 16)"),
}
assert tuple(TABLE) == NAMES
DEFAULT = DEFAULT_LEVEL  # of `verifier check` and of the suites (measured on a 2-core CPU: benchmarks/ci_suite_time.py)


def level(name: str) -> Level:
    """The row of ``name``; an unknown name is a UsageError listing the levels."""
    try:
        return TABLE[name]
    except (KeyError, TypeError):
        raise UsageError(f"{name!r} is not a run level", fix=f"use one of {', '.join(TABLE)}") from None


def _help(lv: Level) -> str:
    drawn = f"{lv.hypothesis} Hypothesis examples per dtype" if lv.hypothesis else "no Hypothesis"
    repeats = f"{lv.repeats} determinism repeats" if lv.name == "quick" else f"{lv.repeats} repeats"
    extra = ", --sanitize on the first dtype only" if lv.sanitize_first_dtype_only else ""
    large = ""
    if lv.large_index:
        on_cpu = ("every one" if lv.large_on_cpu is None else ", ".join(lv.large_on_cpu)) + (
            " on the first dtype" if lv.large_on_cpu_first_dtype_only else "")
        large = (", the large cases (past 2^31 and 2^32 elements, over 65535 rows, rows 2^31 apart: on a CPU Triton "
                 f"kernels only, {on_cpu})")
    return f"{lv.name}: {lv.catalogue}{large}, {drawn}, {repeats}{extra}"


# What each level does, for --help (tests/test_bench_cli.py reads it against the table).
HELP = "; ".join(_help(lv) for lv in TABLE.values())
