"""A finding: one thing the battery found wrong (or could not check). Frozen; reporters only read it."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional

from verifier.constants import SANITIZER_TOOLS

CHECK_CLASSES = (
    "build", "resources", "static", "refusal", "value", "rounding", "invariant", "nan-inf", "unwritten",
    "out-of-range-write", "out-of-range-read", "input-clobbered", "determinism", "crash", "timeout",
) + SANITIZER_TOOLS
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    check: str
    message: str
    severity: str = "error"
    kernel: str = ""
    dtype: str = ""
    input: str = ""  # catalogue case name, or 'hypothesis'
    shape: Optional[tuple] = None
    seed: Optional[int] = None
    repro: str = ""
    file: Optional[str] = None  # repo-relative source file (sanitizer findings)
    line: Optional[int] = None
    score: float = 0.0  # larger is worse; used to order findings (e.g. worst ULP excess)

    def __post_init__(self):
        if self.check not in CHECK_CLASSES:
            raise ValueError(f"unknown check class {self.check!r}; one of {CHECK_CLASSES}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; one of {SEVERITIES}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape) if self.shape is not None else None
        return d
