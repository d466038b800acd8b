"""A kernel whose result on one input changes from run to run: a **determinism** finding, never an abort.

Hypothesis replays a failing example before reporting it; when the replay passes it raises ``Flaky``
(``FlakyFailure``). For a kernel that is wrong on some calls and right on others that is the finding
itself: the same input failed once and passed once. Both outcomes go into the message.
"""
from __future__ import annotations

from verifier.results.findings import Finding
from verifier.results.options import repro_line
from verifier.results.run import sorted_findings

try:
    from hypothesis.errors import Flaky
except ImportError:  # hypothesis is a dependency; keep the name importable without it
    class Flaky(Exception):
        pass


def flaky_finding(spec, dt, opts, failed: list, error: BaseException) -> Finding:
    """The determinism finding of an input that failed (with ``failed`` findings) and then passed on replay."""
    errors = sorted_findings(failed)
    first = errors[0] if errors else None
    if first is not None:
        worst = first.message.splitlines()[0]
        outcome = (f"first run: failed with {len(errors)} finding(s) [{', '.join(dict.fromkeys(f.check for f in errors))}]"
                   f", worst: {worst}; replay of the same input: passed")
        ctx = dict(kernel=spec.name, dtype=dt.tag, input=first.input, shape=first.shape, seed=opts.seed,
                   repro=first.repro or repro_line(spec, opts, dt.tag, first.input))
    else:
        outcome = f"Hypothesis saw an input fail and then pass on replay ({type(error).__name__})"
        ctx = dict(kernel=spec.name, dtype=dt.tag, input="hypothesis", seed=opts.seed,
                   repro=repro_line(spec, opts, dt.tag))
    return Finding("determinism", f"flaky: the same input gave different verdicts on two runs; {outcome}. "
                   "Re-run the repro line a few times: a kernel that is wrong on some calls races or reads "
                   "uninitialized memory", **ctx)
