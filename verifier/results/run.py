"""The results of one run: its kernel reports and where it ran (Result), what the reporters read of them, and
whether anything was checked at all.

A run in which every kernel was skipped must not exit 0: exit 4 (``EXIT_NOTHING_CHECKED``) means no check ran
on any kernel (e.g. CUDA kernels without nvcc, every sanitizer run without compute-sanitizer or a GPU); the
reasons go to stderr, each with its fix, so a CI job that must trust a green run is not handed a report of
nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from verifier.constants import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_NOTHING_CHECKED, EXIT_OK
from verifier.results.cells import Cell, merged
from verifier.results.findings import CHECK_CLASSES
from verifier.results.kernel import KernelReport

REQUIRE_VALUES_FIX = ("run it where its values can be checked (a CUDA kernel: on a GPU machine), or leave out "
                      "--require-values (--verifier-require-values) to accept build/resources/lint-only results")

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass
class Result:
    reports: list  # KernelReport
    environment: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    source_root: Optional[str] = None  # where repo-relative finding files live (default: the git checkout of cwd)

    def summary(self) -> dict:
        verdicts = [r.verdict for r in self.reports]
        return {
            "kernels": len(verdicts),
            "pass": verdicts.count("pass"),
            # no error finding, but values never checked (e.g. CUDA kernels on a CPU machine): not 'pass'
            "unchecked": verdicts.count("unchecked"),
            "fail": verdicts.count("fail"),
            "error": verdicts.count("error"),
            "skipped": verdicts.count("skipped"),
            "findings": sum(len(r.findings) for r in self.reports),
            "warnings": sum(1 for r in self.reports for f in r.findings if f.severity == "warning"),
        }

    def exit_code(self, strict: bool = False, require_values: bool = False) -> int:
        """3 for a bug in kernel-verifier, 4 when nothing was checked, 1 for findings (an error in a spec's own
        code included; warnings only with ``strict``; a kernel whose values were not checked only with
        ``require_values``, which fails a skipped kernel too), else 0.

        A run whose every kernel is ``unchecked`` exits 0, not 4: its build, resources and static checks ran and
        found nothing, and 4 means that no check at all ran. Its verdicts and summary say ``unchecked``; a CI job
        that must check values passes ``require_values``."""
        s = self.summary()
        if any(r.internal_error for r in self.reports):
            return EXIT_INTERNAL
        if nothing_checked(self):
            return EXIT_NOTHING_CHECKED  # every kernel skipped: never reads as 'every kernel passed'
        failed = s["fail"] or s["error"] or (strict and s["warnings"]) or (require_values and not_checked(self))
        return EXIT_FINDINGS if failed else EXIT_OK


def unchecked_reasons(reports) -> list:
    """Why the ``unchecked`` kernels' values were not checked, each reason once, in its short form (the words before
    its first colon: "no CUDA GPU")."""
    return list(dict.fromkeys(why.split(":")[0] for r in reports if r.verdict == "unchecked"
                              for why in r.unchecked_values()))


def verdict_counts(result, sep: str = ", ") -> str:
    """``a pass, b unchecked (values not checked: no CUDA GPU), c fail, d error, e skipped``: the verdicts of a
    summary line (the unchecked count only where there is one), in every format's words."""
    s = result.summary()
    parts = [f"{s['pass']} pass"]
    if s["unchecked"]:
        parts.append(f"{s['unchecked']} unchecked (values not checked: {'; '.join(unchecked_reasons(result.reports))})")
    parts += [f"{s['fail']} fail", f"{s['error']} error", f"{s['skipped']} skipped"]
    return sep.join(parts)


def not_checked(result) -> list:
    """The kernels whose values were not checked: ``unchecked`` and ``skipped`` ones (what --require-values fails)."""
    return [r for r in result.reports if r.verdict in ("unchecked", "skipped")]


def require_values_message(result, command: str = "verifier") -> str:
    """The stderr lines of a --require-values run in which some kernel's values were not checked."""
    missed = not_checked(result)
    why = "; ".join(dict.fromkeys(w for r in missed for w in r.unchecked_values())) or "skipped"
    return (f"{command}: --require-values: the values of {len(missed)} kernel(s) were not checked ({why}): "
            f"{', '.join(r.name for r in missed)}\n  fix: {REQUIRE_VALUES_FIX}\n")


def sorted_findings(findings):
    """Worst first: errors before warnings, then by score (ULP excess, counts), then check class order."""
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], -f.score, CHECK_CLASSES.index(f.check)))


def columns(reports) -> list[str]:
    """Check classes shown as columns: every class that any report has a cell or finding for, in canonical order."""
    used = {c for r in reports for (_, c) in r.cells} | {f.check for r in reports for f in r.findings}
    return [c for c in CHECK_CLASSES if c in used]


def rows(report) -> list[str]:
    tags = [d.tag for d in report.spec.dtypes if any(k[0] == d.tag for k in report.cells)]
    return tags or ["*"]


def cell(report, tag: str, check: str) -> Optional[Cell]:
    """The cell shown for (tag, check): FAIL when an error finding names it, warn when a pass has warnings;
    None when the kernel has no such cell."""
    if any(f.check == check and f.severity == "error" and f.dtype in (tag, "") for f in report.findings):
        return Cell("FAIL")
    v = report.cells.get((tag, check)) or report.cells.get(("*", check))
    if v is not None and v.status in ("pass", "FAIL") and any(
            f.check == check and f.severity == "warning" and f.dtype in (tag, "") for f in report.findings):
        return Cell("warn")  # passed, but something undeclared speaks (a spill with no limit declared)
    return v


def skip_reasons(reports) -> list:
    """The distinct reasons of the skipped cells, in first-seen order."""
    reasons: list = []
    for r in reports:
        for v in r.cells.values():
            if v.skipped and v.reason not in reasons:
                reasons.append(v.reason)
    return reasons


def nothing_checked(result) -> bool:
    """True when the result holds kernels and every one of them was skipped."""
    verdicts = [r.verdict for r in result.reports]
    return bool(verdicts) and all(v == "skipped" for v in verdicts)


def nothing_checked_message(result, command: str = "verifier") -> str:
    """The stderr lines of a run that checked nothing."""
    lines = [f"{command}: nothing was checked: all {len(result.reports)} kernel(s) were skipped "
             f"(exit {EXIT_NOTHING_CHECKED}); why:"]
    lines += [f"  - {why}" for why in skip_reasons(result.reports)]
    return "\n".join(lines) + "\n"


def merge(results) -> Result:
    """One Result from several (e.g. `verifier check` and `verifier sanitize` of one change): a kernel in
    more than one keeps all its distinct findings and notes, its cells (FAIL over pass over skipped) and its worst
    verdict."""
    results = list(results)
    by_name: dict = {}
    for res in results:
        for r in res.reports:
            have = by_name.get(r.spec.name)
            if have is None:
                by_name[r.spec.name] = KernelReport(spec=r.spec, device=r.device, findings=list(r.findings),
                                                    cells=dict(r.cells), notes=list(r.notes), seconds=r.seconds,
                                                    error=r.error, error_kind=r.error_kind)
                continue
            for key, v in r.cells.items():
                have.cells[key] = merged(have.cells.get(key), v)
            have.findings += [f for f in r.findings if f not in have.findings]  # the same file given twice
            have.notes += [n for n in r.notes if n not in have.notes]  # typed notes compare by kind and text
            have.seconds += r.seconds
            if r.error:  # an internal error anywhere keeps the merged one internal
                kinds = {r.error_kind} | ({have.error_kind} if have.error else set())
                have.error_kind = "internal" if "internal" in kinds else r.error_kind
            have.error = "\n".join(e for e in (have.error, r.error) if e) or None
    env = next((res.environment for res in results if res.environment), {})
    opts = next((res.options for res in results if res.options), {})
    root = next((res.source_root for res in results if res.source_root), None)
    return Result(reports=list(by_name.values()), environment=dict(env), options=dict(opts), source_root=root)
