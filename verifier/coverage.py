"""Whether a run checked anything at all: a run in which every kernel was skipped must not exit 0.

Exit code 4 (``NOTHING_CHECKED``) means: no check ran on any kernel (every cell skipped, e.g. CUDA kernels
without nvcc, or every sanitizer run without compute-sanitizer or a GPU). The reasons go to stderr, each with
its fix, so a CI job that must trust a green run is not handed a report of nothing.
"""
from __future__ import annotations

NOTHING_CHECKED = 4


def nothing_checked(result) -> bool:
    """True when the result holds kernels and every one of them was skipped."""
    verdicts = [r.verdict for r in result.reports]
    return bool(verdicts) and all(v == "skipped" for v in verdicts)


def skip_reasons(result) -> list:
    """The distinct reasons of the skipped cells, in first-seen order."""
    reasons = []
    for r in result.reports:
        for v in r.cells.values():
            if v.startswith("skipped(") and v[len("skipped("):-1] not in reasons:
                reasons.append(v[len("skipped("):-1])
    return reasons


def message(result, command: str = "verifier") -> str:
    """The stderr lines of a run that checked nothing."""
    lines = [f"{command}: nothing was checked: all {len(result.reports)} kernel(s) were skipped "
             f"(exit {NOTHING_CHECKED}); why:"]
    lines += [f"  - {why}" for why in skip_reasons(result)]
    return "\n".join(lines) + "\n"
