"""What the two checked-in suppression files (sanitizer and lint) share: reading the TOML, validating the common
keys of a ``[[suppress]]`` entry, matching a finding's kernel/file/line, and turning a hit into an 'info' finding.

Each file's own module keeps what differs: the selector key (``tool`` or ``kind``) and its allowed values.
"""
from __future__ import annotations

import dataclasses
import fnmatch
from pathlib import Path
from typing import Optional

from verifier.errors import UsageError


def toml_module():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise UsageError("reading suppression files needs tomllib (Python >= 3.11) or tomli",
                             fix="pip install tomli, or use Python 3.11+") from None
    return tomllib


def read(path) -> dict:
    """The parsed TOML of a suppressions file; unreadable or malformed is a UsageError naming the file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"cannot read suppressions file {path}: {e.strerror}", fix="pass an existing file") from None
    toml = toml_module()
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as e:
        raise UsageError(f"suppressions file {path} is not valid TOML: {e}", fix="fix the TOML syntax") from None


def entries(data: dict, origin: str, keys: set) -> list:
    """``(where, entry)`` for each ``[[suppress]]`` table: only known keys, all strings, a non-empty reason."""
    unknown_top = set(data) - {"suppress"}
    if unknown_top:
        raise UsageError(f"{origin}: unknown top-level key(s) {sorted(unknown_top)}",
                         fix="write each suppression as a [[suppress]] table")
    tables = data.get("suppress", [])
    if not isinstance(tables, list):
        raise UsageError(f"{origin}: 'suppress' must be an array of tables", fix="write [[suppress]] entries")
    out = []
    for i, e in enumerate(tables, 1):
        where = f"{origin} entry #{i}"
        if not isinstance(e, dict):
            raise UsageError(f"{where} is not a table", fix="write [[suppress]] followed by key = value lines")
        unknown = set(e) - keys
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {sorted(unknown)}", fix=f"keys are {', '.join(sorted(keys))}")
        for k, v in e.items():
            if not isinstance(v, str):
                raise UsageError(f"{where}: {k} must be a string, got {v!r}", fix=f'write {k} = "..."')
        if not e.get("reason", "").strip():
            raise UsageError(f"{where} has no reason", fix='add reason = "why this finding is not a defect"')
        out.append((where, e))
    return out


def file_and_line(e: dict, where: str) -> tuple:
    """``file = "path:123"`` → ("path", 123); a path without a line → (path, None)."""
    file, line = e.get("file"), None
    if file is not None and ":" in file:
        file, _, num = file.rpartition(":")
        if not num.isdigit():
            raise UsageError(f"{where}: file {e['file']!r} has a bad line number", fix='write "path/to/file.cu:123"')
        line = int(num)
    return file, line


def matches_place(s, f) -> bool:
    """Does finding ``f`` sit where entry ``s`` (with kernel/file/line attributes) points?"""
    if s.kernel is not None and not fnmatch.fnmatchcase(f.kernel, s.kernel):
        return False
    if s.file is not None and not (f.file and fnmatch.fnmatchcase(f.file, s.file)):
        return False
    return s.line is None or f.line == s.line


def nearest(start, name: str) -> Optional[Path]:
    """The nearest file ``name`` at or above ``start``, never past a repository root."""
    p = Path(start).resolve()
    for d in ([p] if p.is_dir() else []) + list(p.parents):
        if (d / name).is_file():
            return d / name
        if (d / ".git").exists():
            return None
    return None


def apply(entries_: list, findings: list) -> tuple:
    """(findings with each suppressed one turned 'info' saying why, entries that matched none)."""
    out, used = [], set()
    for f in findings:
        hit = next((s for s in entries_ if s.matches(f)), None)
        if hit is None:
            out.append(f)
        else:
            used.add(hit)
            out.append(dataclasses.replace(f, severity="info", message=f"{f.message}\n  suppressed: {hit.reason}"))
    return out, [s for s in entries_ if s not in used]
