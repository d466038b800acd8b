"""Where reports point: repo-relative paths, source excerpts, the line declaring a kernel in its spec file.

Reports run on CI machines whose checkout lives somewhere like /home/runner/work/x/x; PR comments, SARIF
and JUnit want paths relative to the repository root, so every path shown goes through here.
"""
from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Optional

_LANG = {".cu": "cuda", ".cuh": "cuda", ".h": "cpp", ".hpp": "cpp", ".cc": "cpp", ".cpp": "cpp", ".py": "python"}


@lru_cache(maxsize=8)
def git_toplevel(cwd: str) -> Optional[str]:
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, cwd=cwd,
                             timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def source_root(result) -> Path:
    """The result's ``source_root``, else the git checkout holding the working directory, else the working directory."""
    root = getattr(result, "source_root", None)
    if root:
        return Path(root).resolve()
    cwd = str(Path.cwd())
    return Path(git_toplevel(cwd) or cwd).resolve()


def relative(path: Optional[str], root: Path) -> Optional[str]:
    """``path`` relative to ``root`` in POSIX form when it lies under it; relative paths are kept as they are."""
    if not path:
        return None
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    try:
        return p.resolve().relative_to(root).as_posix()
    except ValueError:
        return p.as_posix()


def shown_repro(repro: str, root: Path) -> str:
    """The repro command with the checkout's absolute prefix removed, so it can be pasted in any clone."""
    return repro.replace(f"{root.as_posix()}/", "")


def language(path: str) -> str:
    return _LANG.get(Path(path).suffix, "")


def excerpt(root: Path, file: str, line: int, context: int = 3) -> Optional[list[tuple[int, str]]]:
    """(line number, text) pairs around ``line`` of ``file`` (repo-relative), or None when it cannot be read."""
    p = Path(file) if Path(file).is_absolute() else root / file
    try:
        lines = p.read_text(errors="replace").splitlines()
    except OSError:
        return None
    if not 1 <= line <= len(lines):
        return None
    lo, hi = max(1, line - context), min(len(lines), line + context)
    return [(n, lines[n - 1]) for n in range(lo, hi + 1)]


def declaration_line(root: Path, spec) -> int:
    """The line of the spec file where ``spec`` was constructed (recorded when it was built, so a kernel made in a
    comprehension or a helper lands on its own line), else the line of ``name="kernel"`` in the file (a result
    written without it), else 1: so an annotation lands on the kernel."""
    if getattr(spec, "line", None):
        return spec.line
    spec_file, kernel = spec.origin, spec.name
    if not spec_file:
        return 1
    p = Path(spec_file) if Path(spec_file).is_absolute() else root / spec_file
    try:
        text = p.read_text(errors="replace")
    except OSError:
        return 1
    m = re.search(r"""name\s*=\s*(['"])""" + re.escape(kernel) + r"\1", text)
    return text.count("\n", 0, m.start()) + 1 if m else 1
