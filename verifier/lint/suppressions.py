"""Checked-in suppressions for ``verifier lint`` findings (``lint-suppressions.toml``, the nearest at or above
the spec file, up to the repository root). Each ``[[suppress]]`` entry says what it silences and why::

    [[suppress]]
    kind = "shared-race"                     # required: divergent-barrier | shared-race | inactive-lanes |
                                             #           global-race | not-followed | offset-wrap |
                                             #           unwritten-shared
    kernel = "my-softmax-*"                  # glob over kernel names
    file = "kernels/my_softmax.cu:120"       # repo-relative path (glob), optionally :line (the first point)
    reason = "warp-synchronous: ordered by __syncwarp, which lint does not model"   # required

kind plus at least one of kernel / file is required. A suppressed finding stays in the report as 'info' with
"suppressed: <reason>"; an entry that matched nothing is listed in the notes, so stale entries get deleted.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from verifier.errors import UsageError
from verifier.lint.issues import CLASSES
from verifier.toolchain import suppressions as _file

FILE_NAME = "lint-suppressions.toml"
_KEYS = {"kind", "kernel", "file", "reason"}


@dataclass(frozen=True)
class LintSuppression:
    kind: str
    reason: str
    kernel: Optional[str] = None
    file: Optional[str] = None
    line: Optional[int] = None
    origin: str = ""

    def matches(self, f) -> bool:
        return f.check == "static" and f.message.startswith(self.kind + ":") and _file.matches_place(self, f)


def load(path) -> list:
    out = []
    for where, e in _file.entries(_file.read(path), str(path), _KEYS):
        if e.get("kind") not in CLASSES:
            raise UsageError(f"{where}: kind is {e.get('kind')!r}", fix=f"use one of {', '.join(CLASSES)}")
        if "kernel" not in e and "file" not in e:
            raise UsageError(f"{where} would suppress every {e['kind']} finding", fix="narrow it with kernel or file")
        file, line = _file.file_and_line(e, where)
        out.append(LintSuppression(kind=e["kind"], reason=e["reason"].strip(), kernel=e.get("kernel"), file=file,
                                   line=line, origin=where))
    return out


def for_spec(spec) -> list:
    """Entries of the nearest lint-suppressions.toml at or above the spec file (none past the repository root)."""
    if not spec.origin:
        return []
    path = _file.nearest(Path(spec.origin).parent, FILE_NAME)
    return load(path) if path else []


def apply(entries: list, findings: list) -> tuple:
    """(findings with suppressed ones as 'info' saying why, entries that matched none)."""
    return _file.apply(entries, findings)
