"""The result of one kernel's battery: its cells, findings and notes (KernelReport), and the crash finding of a
kernel that raised.

The steps write into a KernelReport; the isolation children send one back (verifier.results.serialize); the
report formats and the pytest plugin read it. A report read back from JSON is a KernelReport too, whose spec is
a verifier.results.serialize.SavedSpec.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from verifier.results.cells import FAIL, PASS, WARN, Cell, marked, skipped
from verifier.results.findings import Finding
from verifier.results.options import Options, repro_line

RUN_CHECKS = ("refusal", "value", "rounding", "invariant", "nan-inf", "unwritten", "out-of-range-write",
              "input-clobbered", "determinism")
USER_ERROR = "user"  # KernelReport.error_kind of an error in the spec's own code (verifier.declare.usercode)
# A kernel's verdicts, best first. 'unchecked': no error finding, but its values were never checked (every value
# cell skipped: a CUDA kernel on a machine without a GPU is built, resource-checked and linted only). It is not
# 'pass': the exit code stays 0 (what ran found nothing), unless --require-values makes it fail.
VERDICTS = ("pass", "unchecked", "fail", "error", "skipped")

__all__ = ["KernelReport", "crash_finding", "RUN_CHECKS", "USER_ERROR", "VERDICTS", "Cell", "PASS", "FAIL", "WARN",
           "skipped"]


@dataclass
class KernelReport:
    spec: Any  # a verifier.declare.kernels.KernelSpec (live) or a SavedSpec (read back)
    device: str
    findings: list = field(default_factory=list)
    cells: dict = field(default_factory=dict)  # (dtype tag or '*', check) -> Cell
    notes: list = field(default_factory=list)  # verifier.results.notes: refused cases, resources, timings
    seconds: float = 0.0
    error: Optional[str] = None  # the kernel could not be checked (verdict 'error')
    judged: dict = field(default_factory=dict)  # dtype tag -> inputs that ran through the value checks
    vacuous: dict = field(default_factory=dict)  # dtype tag -> of those, inputs whose value bounds all held 0
    error_kind: str = "internal"  # USER_ERROR: the error is in the spec's own code, exit 1; internal: exit 3
    inputs: dict = field(default_factory=lambda: {"ran": 0, "raised": 0})  # inputs judged / raising

    def __post_init__(self):
        for key, v in self.cells.items():  # a cell given as its JSON text ("pass", "skipped(why)") is parsed once
            if not isinstance(v, Cell):
                self.cells[key] = Cell.parse(v)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def verdict(self) -> str:
        if self.error:
            return "error"
        if any(f.severity == "error" for f in self.findings):
            return "fail"
        if self.cells and all(v.skipped for v in self.cells.values()):
            return "skipped"
        if self.unchecked_values():
            return "unchecked"
        return "pass"

    def unchecked_values(self) -> list:
        """The distinct reasons its values were not checked, when every value cell it has is skipped (a CUDA
        kernel without a GPU); [] when a value check ran, or when it has no value cell (lint, sanitize, a run of
        --case refusal)."""
        cells = [v for (_, check), v in self.cells.items() if check == "value"]
        if not cells or not all(v.skipped for v in cells):
            return []
        return list(dict.fromkeys(v.reason for v in cells))

    @property
    def internal_error(self) -> bool:
        """Whether the report's error is a bug in kernel-verifier (exit 3) rather than the user's code."""
        return bool(self.error) and self.error_kind != USER_ERROR

    def mark(self, tag: str, check: str, value: Cell):
        value = value if isinstance(value, Cell) else Cell.parse(value)
        new = marked(self.cells.get((tag, check)), value)
        if new is not None:
            self.cells[(tag, check)] = new

    def add(self, finding: Finding):
        self.findings.append(finding)
        self.mark(finding.dtype or "*", finding.check, FAIL if finding.severity == "error" else WARN)

    def skip_all(self, tags, checks, reason: str):
        """Mark every (tag, check) skipped with ``reason``."""
        for tag in tags:
            for check in checks:
                self.mark(tag, check, skipped(reason))


def crash_finding(spec, opts: Options, e, **ctx) -> Finding:
    """The **crash** finding of a kernel that raised ``e`` (a verifier.launch.harness.KernelFault); ``ctx`` adds
    Finding fields (dtype, input, shape, repro: by default the repro line of ctx's dtype and input)."""
    what = "a CUDA fault (the context is unusable; the rest of this kernel's battery was not run)" if e.cuda \
        else "an exception"
    ctx.setdefault("repro", repro_line(spec, opts, ctx.get("dtype", ""), ctx.get("input", "")))
    return Finding("crash", f"the kernel raised {what}: {e}", kernel=spec.name, seed=opts.seed, **ctx)
