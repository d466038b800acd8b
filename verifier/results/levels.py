"""The one budget table: how much each of ``quick``, ``ci`` and ``thorough`` runs.

Read by ``verifier check`` (the battery), the pytest suites (``--verifier-budget``), the input catalogue
(verifier.inputs.catalogue: which cases, at which M) and ``--help``. A leaf: importing it costs nothing.

- ``hypothesis``: examples of the Hypothesis step per kernel and dtype (verifier.battery.hypothesis), the
  same in ``verifier check`` and in a suite's ``test_<op>_shapes``; 0 means the step does not run (the suite
  test skips, saying so).
- ``repeats``: runs of the determinism check on one input.
- ``catalogue``: which catalogue cases, at which M (verifier.inputs.catalogue.catalogue).

``thorough`` does more than ``ci`` in every row: 60 Hypothesis examples per dtype instead of 12, 5 determinism
repeats instead of 3, and every catalogue case at M = 16 rows.
"""
from __future__ import annotations

BUDGETS = {
    "quick": {"hypothesis": 0, "repeats": 2, "catalogue": "a handful of catalogue cases"},
    "ci": {"hypothesis": 12, "repeats": 3, "catalogue": "every catalogue case at small M"},
    "thorough": {"hypothesis": 60, "repeats": 5, "catalogue": "every case at M = 16 rows"},
}
DEFAULT = "ci"  # of `verifier check` and of the suites (measured on a 2-core CPU: benchmarks/ci_suite_time.py)


def _help(name: str) -> str:
    b = BUDGETS[name]
    drawn = f"{b['hypothesis']} Hypothesis examples per dtype" if b["hypothesis"] else "no Hypothesis"
    repeats = f"{b['repeats']} determinism repeats" if name == "quick" else f"{b['repeats']} repeats"
    extra = ", --sanitize on the first dtype only" if name == "quick" else ""
    return f"{name}: {b['catalogue']}, {drawn}, {repeats}{extra}"


# What each budget does, for --help (tests/test_bench_cli.py reads it against the table).
HELP = "; ".join(_help(name) for name in BUDGETS)
