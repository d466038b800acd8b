"""Checked-in suppressions for sanitizer findings (``sanitizer-suppressions.toml`` at the repository root).

Each ``[[suppress]]`` entry names what it silences and why::

    [[suppress]]
    tool = "racecheck"                       # required: racecheck | memcheck | synccheck | initcheck
    kernel = "cuda-softmax-*"                # glob over the spec's kernel name (as `verifier list` shows)
    file = "kernels/cuda/softmax.cu:120"     # repo-relative path (glob), optionally :line
    kind = "RaceHazard"                      # record kind: the first word of the finding's message
    reason = "benign: every thread writes the same value"   # required

At least one of kernel / file / kind must be given (no blanket suppression of a tool). A matching
finding stays in the report with severity 'info' and "suppressed: <reason>"; entries that matched
nothing are reported, so stale suppressions get noticed and deleted.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from verifier.constants import SANITIZER_TOOLS
from verifier.errors import UsageError
from verifier.results.findings import Finding
from verifier.sanitizer.xmlparse import finding_kind
from verifier.toolchain import suppressions as _file

FILE_NAME = "sanitizer-suppressions.toml"
TOOLS = SANITIZER_TOOLS
_KEYS = {"tool", "kernel", "file", "kind", "reason"}


@dataclass(frozen=True)
class Suppression:
    tool: str
    reason: str
    kernel: Optional[str] = None
    file: Optional[str] = None
    line: Optional[int] = None
    kind: Optional[str] = None
    origin: str = ""  # 'path entry #n', for messages

    def matches(self, f: Finding) -> bool:
        if f.check != self.tool or not _file.matches_place(self, f):
            return False
        return self.kind is None or finding_kind(f) == self.kind

    def describe(self) -> str:
        sel = [f"{k}={v}" for k, v in (("kernel", self.kernel), ("kind", self.kind)) if v is not None]
        if self.file is not None:
            sel.append(f"file={self.file}" + (f":{self.line}" if self.line is not None else ""))
        return f"{self.origin}: {self.tool} {' '.join(sel)} ({self.reason})"


def parse_entries(data: dict, origin: str) -> list:
    out = []
    for where, e in _file.entries(data, origin, _KEYS):
        if e.get("tool") not in TOOLS:
            raise UsageError(f"{where}: tool is {e.get('tool')!r}", fix=f"use one of {', '.join(TOOLS)}")
        if not any(k in e for k in ("kernel", "file", "kind")):
            raise UsageError(f"{where} would suppress every {e['tool']} finding",
                             fix="narrow it with kernel, file (path or path:line) or kind")
        file, line = _file.file_and_line(e, where)
        out.append(Suppression(tool=e["tool"], reason=e["reason"].strip(), kernel=e.get("kernel"), file=file,
                               line=line, kind=e.get("kind"), origin=where))
    return out


def load(path) -> list:
    """Entries of a suppressions file; a malformed file or entry is a UsageError naming the entry."""
    return parse_entries(_file.read(path), str(path))


def find_file(start) -> Optional[Path]:
    """The nearest ``sanitizer-suppressions.toml`` at or above ``start``, stopping at a repository root."""
    return _file.nearest(start, FILE_NAME)


def apply(entries: list, findings: list) -> list:
    """Findings with every suppressed one turned into an 'info' finding that says why."""
    return _file.apply(entries, findings)[0]


def unused(entries: list, findings: list) -> list:
    """Entries that match none of ``findings``."""
    return [s for s in entries if not any(s.matches(f) for f in findings)]


def default_suppressions(spec) -> list:
    """The entries of the suppressions file nearest the spec (or the working directory)."""
    path = find_file(Path(spec.origin).parent if spec.origin else Path.cwd())
    return load(path) if path else []
