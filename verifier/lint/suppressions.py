"""Checked-in suppressions for ``verifier lint`` findings (``lint-suppressions.toml``, the nearest at or above
the spec file, up to the repository root). Each ``[[suppress]]`` entry says what it silences and why::

    [[suppress]]
    kind = "shared-race"                     # required: divergent-barrier | shared-race | inactive-lanes |
                                             #           global-race | not-followed
    kernel = "my-softmax-*"                  # glob over kernel names
    file = "kernels/my_softmax.cu:120"       # repo-relative path (glob), optionally :line (the first point)
    reason = "warp-synchronous: ordered by __syncwarp, which lint does not model"   # required

kind plus at least one of kernel / file is required. A suppressed finding stays in the report as 'info' with
"suppressed: <reason>"; an entry that matched nothing is listed in the notes, so stale entries get deleted.
"""
from __future__ import annotations

import dataclasses
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from verifier.errors import UsageError
from verifier.lint.checks import CLASSES

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
        if f.check != "static" or not f.message.startswith(self.kind + ":"):
            return False
        if self.kernel is not None and not fnmatch.fnmatchcase(f.kernel, self.kernel):
            return False
        if self.file is not None and not (f.file and fnmatch.fnmatchcase(f.file, self.file)):
            return False
        return self.line is None or f.line == self.line


def load(path) -> list:
    from verifier.sanitizer.suppressions import toml_module

    path = Path(path)
    toml = toml_module()
    try:
        data = toml.loads(path.read_text())
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}", fix="pass an existing file") from None
    except toml.TOMLDecodeError as e:
        raise UsageError(f"{path} is not valid TOML: {e}", fix="fix the TOML syntax") from None
    if set(data) - {"suppress"} or not isinstance(data.get("suppress", []), list):
        raise UsageError(f"{path}: only [[suppress]] tables are allowed", fix="write each entry as [[suppress]]")
    out = []
    for i, e in enumerate(data.get("suppress", []), 1):
        where = f"{path} entry #{i}"
        if not isinstance(e, dict) or set(e) - _KEYS or not all(isinstance(v, str) for v in e.values()):
            raise UsageError(f"{where}: a table of string keys {', '.join(sorted(_KEYS))} expected",
                             fix='write kind = "...", reason = "...", and kernel / file')
        if e.get("kind") not in CLASSES:
            raise UsageError(f"{where}: kind is {e.get('kind')!r}", fix=f"use one of {', '.join(CLASSES)}")
        if not e.get("reason", "").strip():
            raise UsageError(f"{where} has no reason", fix='add reason = "why this finding is not a defect"')
        if "kernel" not in e and "file" not in e:
            raise UsageError(f"{where} would suppress every {e['kind']} finding", fix="narrow it with kernel or file")
        file, line = e.get("file"), None
        if file is not None and ":" in file:
            file, _, num = file.rpartition(":")
            if not num.isdigit():
                raise UsageError(f"{where}: file {e['file']!r} has a bad line number", fix='write "path/to/file.cu:123"')
            line = int(num)
        out.append(LintSuppression(kind=e["kind"], reason=e["reason"].strip(), kernel=e.get("kernel"), file=file,
                                   line=line, origin=where))
    return out


def for_spec(spec) -> list:
    """Entries of the nearest lint-suppressions.toml at or above the spec file (none past the repository root)."""
    if not spec.origin:
        return []
    for d in Path(spec.origin).resolve().parents:
        if (d / FILE_NAME).is_file():
            return load(d / FILE_NAME)
        if (d / ".git").exists():
            break
    return []


def apply(entries: list, findings: list) -> tuple:
    """(findings with suppressed ones as 'info' saying why, entries that matched none)."""
    out, used = [], set()
    for f in findings:
        hit = next((s for s in entries if s.matches(f)), None)
        if hit is None:
            out.append(f)
        else:
            used.add(hit)
            out.append(dataclasses.replace(f, severity="info", message=f"{f.message}\n  suppressed: {hit.reason}"))
    return out, [s for s in entries if s not in used]
