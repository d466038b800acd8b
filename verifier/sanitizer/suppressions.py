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

import dataclasses
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from verifier.errors import UsageError
from verifier.findings import Finding
from verifier.sanitizer.xmlparse import finding_kind

FILE_NAME = "sanitizer-suppressions.toml"
TOOLS = ("racecheck", "memcheck", "synccheck", "initcheck")
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
        if f.check != self.tool:
            return False
        if self.kernel is not None and not fnmatch.fnmatchcase(f.kernel, self.kernel):
            return False
        if self.file is not None and not (f.file and fnmatch.fnmatchcase(f.file, self.file)):
            return False
        if self.line is not None and f.line != self.line:
            return False
        return self.kind is None or finding_kind(f) == self.kind

    def describe(self) -> str:
        sel = [f"{k}={v}" for k, v in (("kernel", self.kernel), ("kind", self.kind)) if v is not None]
        if self.file is not None:
            sel.append(f"file={self.file}" + (f":{self.line}" if self.line is not None else ""))
        return f"{self.origin}: {self.tool} {' '.join(sel)} ({self.reason})"


def toml_module():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise UsageError("reading sanitizer suppressions needs tomllib (Python >= 3.11) or tomli",
                             fix="pip install tomli, or use Python 3.11+") from None
    return tomllib


def parse_entries(data: dict, origin: str) -> list:
    entries = data.get("suppress", [])
    unknown_top = set(data) - {"suppress"}
    if unknown_top:
        raise UsageError(f"{origin}: unknown top-level key(s) {sorted(unknown_top)}",
                         fix="write each suppression as a [[suppress]] table")
    if not isinstance(entries, list):
        raise UsageError(f"{origin}: 'suppress' must be an array of tables", fix="write [[suppress]] entries")
    out = []
    for i, e in enumerate(entries, 1):
        where = f"{origin} entry #{i}"
        if not isinstance(e, dict):
            raise UsageError(f"{where} is not a table", fix="write [[suppress]] followed by key = value lines")
        unknown = set(e) - _KEYS
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {sorted(unknown)}", fix=f"keys are {', '.join(sorted(_KEYS))}")
        for k in _KEYS:
            if k in e and not isinstance(e[k], str):
                raise UsageError(f"{where}: {k} must be a string, got {e[k]!r}", fix=f'write {k} = "..."')
        reason = (e.get("reason") or "").strip()
        if not reason:
            raise UsageError(f"{where} has no reason", fix='add reason = "why this finding is not a defect"')
        if e.get("tool") not in TOOLS:
            raise UsageError(f"{where}: tool is {e.get('tool')!r}", fix=f"use one of {', '.join(TOOLS)}")
        if not any(k in e for k in ("kernel", "file", "kind")):
            raise UsageError(f"{where} would suppress every {e['tool']} finding",
                             fix="narrow it with kernel, file (path or path:line) or kind")
        file, line = e.get("file"), None
        if file is not None and ":" in file:
            file, _, num = file.rpartition(":")
            if not num.isdigit():
                raise UsageError(f"{where}: file {e['file']!r} has a bad line number", fix='write "path/to/file.cu:123"')
            line = int(num)
        out.append(Suppression(tool=e["tool"], reason=reason, kernel=e.get("kernel"), file=file, line=line,
                               kind=e.get("kind"), origin=where))
    return out


def load(path) -> list:
    """Entries of a suppressions file; a malformed file or entry is a UsageError naming the entry."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"cannot read suppressions file {path}: {e.strerror}", fix="pass an existing file") from None
    toml = toml_module()
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as e:
        raise UsageError(f"suppressions file {path} is not valid TOML: {e}", fix="fix the TOML syntax") from None
    return parse_entries(data, str(path))


def find_file(start) -> Optional[Path]:
    """The nearest ``sanitizer-suppressions.toml`` at or above ``start``, stopping at a repository root."""
    p = Path(start).resolve()
    for d in ([p] if p.is_dir() else []) + list(p.parents):
        cand = d / FILE_NAME
        if cand.is_file():
            return cand
        if (d / ".git").exists():
            return None
    return None


def apply(entries: list, findings: list) -> list:
    """Findings with every suppressed one turned into an 'info' finding that says why."""
    out = []
    for f in findings:
        hit = next((s for s in entries if s.matches(f)), None)
        if hit is None:
            out.append(f)
        else:
            out.append(dataclasses.replace(f, severity="info", message=f"{f.message}\n  suppressed: {hit.reason}"))
    return out


def unused(entries: list, findings: list) -> list:
    """Entries that match none of ``findings``."""
    return [s for s in entries if not any(s.matches(f) for f in findings)]


def default_suppressions(spec) -> list:
    path = find_file(Path(spec.origin).parent if spec.origin else Path.cwd())
    return load(path) if path else []
