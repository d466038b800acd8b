"""The result model of one kernel's battery: its cells, findings and notes (KernelReport), and the
crash finding of a kernel that raised.

A leaf (beside verifier.options): the steps write into a KernelReport, the isolate and forked children send
one back (verifier.report.serialize), the reporters and the pytest plugin read it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from verifier.findings import Finding
from verifier.options import Options, repro_line

if TYPE_CHECKING:  # annotations only
    from verifier.harness import KernelFault
    from verifier.spec import KernelSpec

PASS, FAIL, WARN = "pass", "FAIL", "warn"
RUN_CHECKS = ("refusal", "value", "invariant", "nan-inf", "unwritten", "out-of-range-write", "determinism")


def skipped(reason: str) -> str:
    return f"skipped({reason})"


@dataclass
class KernelReport:
    spec: KernelSpec
    device: str
    findings: list = field(default_factory=list)
    # cells[(dtype_tag, check)] = 'pass' | 'FAIL' | 'skipped(reason)'
    cells: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)  # info lines: refused cases, resources, timings
    seconds: float = 0.0
    error: Optional[str] = None  # internal error while checking (verdict 'error')
    judged: dict = field(default_factory=dict)  # dtype tag -> inputs that ran through the value checks
    error_kind: str = "internal"  # 'user': the error is in the spec's own code (verifier.usercode), exit 1
    inputs: dict = field(default_factory=lambda: {"ran": 0, "raised": 0})  # inputs judged / raising

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def verdict(self) -> str:
        if self.error:
            return "error"
        if any(f.severity == "error" for f in self.findings):
            return "fail"
        if self.cells and all(v.startswith("skipped") for v in self.cells.values()):
            return "skipped"
        return "pass"

    def mark(self, tag: str, check: str, value: str):
        old = self.cells.get((tag, check))
        if old == FAIL or (old == WARN and value != FAIL):
            return
        if value in (FAIL, WARN) or old is None or (old.startswith("skipped") and value != PASS):
            self.cells[(tag, check)] = value

    def add(self, finding: Finding):
        self.findings.append(finding)
        self.mark(finding.dtype or "*", finding.check, FAIL if finding.severity == "error" else WARN)


def crash_finding(spec: KernelSpec, opts: Options, e: KernelFault, **ctx) -> Finding:
    """The **crash** finding of a kernel that raised ``e``; ``ctx`` adds Finding fields (dtype, input, shape,
    repro: by default the repro line of ctx's dtype and input)."""
    what = "a CUDA fault (the context is unusable; the rest of this kernel's battery was not run)" if e.cuda \
        else "an exception"
    ctx.setdefault("repro", repro_line(spec, opts, ctx.get("dtype", ""), ctx.get("input", "")))
    return Finding("crash", f"the kernel raised {what}: {e}", kernel=spec.name, seed=opts.seed, **ctx)
