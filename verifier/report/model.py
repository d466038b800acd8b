"""What reporters read: the kernel reports of one run and where it ran."""
from __future__ import annotations

from dataclasses import dataclass, field

from verifier.findings import CHECK_CLASSES

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass
class Result:
    reports: list  # verifier.battery.KernelReport
    environment: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)

    def summary(self) -> dict:
        verdicts = [r.verdict for r in self.reports]
        return {
            "kernels": len(verdicts),
            "pass": verdicts.count("pass"),
            "fail": verdicts.count("fail"),
            "error": verdicts.count("error"),
            "skipped": verdicts.count("skipped"),
            "findings": sum(len(r.findings) for r in self.reports),
        }

    def exit_code(self) -> int:
        s = self.summary()
        if s["error"]:
            return 3
        return 1 if s["fail"] else 0


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


def cell(report, tag: str, check: str) -> str:
    if any(f.check == check and f.severity == "error" and f.dtype in (tag, "") for f in report.findings):
        return "FAIL"
    v = report.cells.get((tag, check)) or report.cells.get(("*", check))
    return v or "-"
