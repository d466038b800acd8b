"""What a battery stopped at its timeout, or a child that died (or was killed at it), never ran, said in its report:
nothing is skipped silently (verifier.battery: the battery's own deadline; verifier.isolation.children: a dead child).

The child announces each step before running it (``NAME [TAG]: STEP``: refusal, values, a config, a catalogue
case, a drawn shape, determinism); verifier.isolation.children reads the announcements back as (tag, step) pairs,
the last one being the step it died in. Against the battery's own plan (verifier.battery.plan.wants, the
catalogue's verifier.inputs.cases.selected_cases), ``mark_unfinished`` adds to the report kept from the child
(verifier.isolation.journal) a note per dtype naming what never ran, and unmarks the cells of the step that died:
a check cell the child had passed under an earlier autotune config is not a pass of the step it died in.
"""
from __future__ import annotations

import re

from verifier.battery.plan import CONFIG_STEP, VALUE_CHECKS, wants
from verifier.inputs.cases import selected_cases
from verifier.launch import runnable_reason
from verifier.results.cells import PASS, skipped
from verifier.results.notes import case_not_run

_DTYPE_STEPS = ("refusal", "values", "shapes", "determinism")  # the per-dtype steps of the plan, in order
_GROUP_CHECKS = {"refusal": ("refusal",), "values": VALUE_CHECKS, "shapes": VALUE_CHECKS,
                 "determinism": ("determinism",)}
_CONFIG = re.compile(r"autotune config (\d+) of (\d+)")
_SHAPES = "hypothesis:"  # a drawn shape's case name (verifier.inputs.cases.hypothesis_case)


def _group(step: str) -> str:
    """The per-dtype step a step line belongs to ('values' for a config line or a catalogue case)."""
    if step in ("refusal", "determinism"):
        return step
    return "shapes" if step.startswith(_SHAPES) else "values"


def _case_names(spec, tag: str, opts):
    dt = next(d for d in spec.dtypes if d.tag == tag)
    try:
        return [c.name for c in selected_cases(spec, dt, opts)]
    except Exception:  # noqa: BLE001 - a spec whose supports() raises: its cases are named by what ran
        return None


def _values_left(spec, tag: str, opts, seen: list) -> list:
    """What the values step of ``tag`` never ran, the child having announced ``seen`` (its steps of that dtype)."""
    start = max((i for i, s in enumerate(seen) if s == "values" or s.startswith(CONFIG_STEP)), default=0)
    done = [s for s in seen[start:] if s != "values" and not s.startswith(CONFIG_STEP)]
    names = _case_names(spec, tag, opts)
    left = []
    if names is None:
        left.append("the catalogue cases after it")
    else:
        after = names[names.index(done[-1]) + 1:] if done and done[-1] in names else \
            [n for n in names if n not in done]
        if after:
            left.append(f"catalogue case(s) {', '.join(after)}")
    m = next((_CONFIG.search(s) for s in reversed(seen) if s.startswith(CONFIG_STEP)), None)
    if m and int(m[1]) < int(m[2]):
        left.append(f"autotune config(s) {int(m[1]) + 1} to {m[2]}")
    return left


def _left_of_dying_dtype(spec, tag: str, opts, seen: list) -> list:
    group = _group(seen[-1])
    later = [s for s in _DTYPE_STEPS[_DTYPE_STEPS.index(group) + 1:] if wants(opts, s)]
    left = _values_left(spec, tag, opts, seen) if group == "values" else []
    if group == "shapes" and len(seen) > 1:
        left.append("the drawn shapes after it")
    return left + [("the Hypothesis-drawn shapes" if s == "shapes" else s) for s in later]


def mark_unfinished(report, spec, opts, steps: list, died: str) -> str:
    """Add to ``report`` (what the child completed) a note per dtype naming what never ran, the child having
    announced ``steps`` ([(tag, step)] of this kernel) before it ``died`` ('died' / 'timed out'); a check cell of
    the step it died in that reads pass is unmarked. Returns a clause for the crash / timeout finding ('' when
    nothing of the battery was left: it died after its last step)."""
    tags = [d.tag for d in spec.dtypes if opts.dtype in (None, d.tag)]
    if not tags or runnable_reason(spec, opts.device) is not None:  # nothing would have run here anyway (a CUDA
        return ""  # kernel on the CPU: built and linted only)
    dying, last = steps[-1] if steps else ("", "")
    if not steps:
        where = "before its first step"
    elif dying and last not in ("values", "refusal", "determinism") and not last.startswith(CONFIG_STEP):
        where = f"while checking case {last}"
    else:
        where = f"in its step '{last}'"
    wanted = [("the Hypothesis-drawn shapes" if s == "shapes" else s) for s in _DTYPE_STEPS if wants(opts, s)]
    summary = []
    for tag in tags:
        seen = [s for t, s in steps if t == tag]
        if tag == dying:
            for check in _GROUP_CHECKS[_group(seen[-1])]:
                if report.cells.get((tag, check)) == PASS:
                    report.cells[(tag, check)] = skipped(f"not finished: the child process {died} in this step")
            left = _left_of_dying_dtype(spec, tag, opts, seen)
            judged = report.judged.get(tag, 0)
            ran = f" ({judged} input(s) judged before it: their findings are kept)" if judged else ""
        elif seen:
            continue  # completed before the step the child died in (the battery checks one dtype after another)
        else:
            left, ran = wanted, ""
        if not left:
            continue
        report.notes.append(case_not_run(f"[{tag}] not run: the child process {died} {where}"
                                         f"{ran}; never ran: {'; '.join(left)}"))
        summary.append(f"{', '.join(left)} of {tag}" if tag == dying else f"every step of {tag}")
    if opts.sanitize:
        summary.append("the sanitizer runs")
        report.notes.append(case_not_run(f"not run: the compute-sanitizer runs (the child process {died})"))
    return f"; not run after it: {'; '.join(summary)} (listed in the notes)" if summary else ""


__all__ = ["mark_unfinished"]
