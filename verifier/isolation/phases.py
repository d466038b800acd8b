"""Time marks of a `verifier check` run for benchmarks/verdict_time.py: with $VERIFIER_PHASES=FILE set, the
parent and the check child append ``NAME UNIX_TIME`` lines to FILE (the parent when it spawns and reaps the
child, the child when its module starts loading, when its imports are done, when the spec is loaded and when
the battery is done), and the child's battery runs under cProfile into FILE.prof. Unset: nothing happens."""
from __future__ import annotations

import os
import time

ENV = "VERIFIER_PHASES"


def mark(name: str) -> None:
    path = os.environ.get(ENV)
    if path:
        with open(path, "a") as fh:
            fh.write(f"{name} {time.time():.6f}\n")


def profiled(fn, *args):
    """``fn(*args)``, under cProfile (stats dumped to $VERIFIER_PHASES.prof) when $VERIFIER_PHASES is set."""
    path = os.environ.get(ENV)
    if not path:
        return fn(*args)
    import cProfile

    prof = cProfile.Profile()
    try:
        return prof.runcall(fn, *args)
    finally:
        prof.dump_stats(path + ".prof")
