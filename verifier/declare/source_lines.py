"""Where in a spec file a kernel is declared: for messages that must point at a line (duplicate names), and for
reports (SARIF, JUnit) that annotate the kernel's declaration, however the spec built it (a list comprehension, a
helper function, a computed name)."""
from __future__ import annotations

import ast
import os
import sys
from pathlib import Path
from typing import Optional

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # verifier/
_MAX_SITES = 8


def construction_sites() -> tuple:
    """(file, line) of each caller frame outside kernel-verifier, innermost first: where a spec object is being
    built. Recorded at construction because a kernel made in a comprehension or a helper has no ``name="..."``
    literal for a later search to find."""
    sites = []
    frame = sys._getframe(1)
    while frame is not None and len(sites) < _MAX_SITES:
        file = frame.f_code.co_filename
        if not file.startswith("<") and not os.path.abspath(file).startswith(_PACKAGE + os.sep):
            sites.append((os.path.abspath(file), frame.f_lineno))
        frame = frame.f_back
    return tuple(sites)


def line_in(sites, path) -> Optional[int]:
    """The innermost of ``sites`` in file ``path`` (a kernel built in its spec file, or in a helper it calls there)."""
    if not path:
        return None
    want = os.path.realpath(str(path))
    return next((line for file, line in sites if os.path.realpath(file) == want), None)

_CONSTRUCTORS = ("CudaKernel", "TritonKernel", "CallableKernel")


def declaration_lines(path, name: str) -> list:
    """Line numbers of ``CudaKernel(name="NAME", ...)`` (and the other constructors) in ``path``; [] when the
    name is computed or the file does not parse."""
    try:
        tree = ast.parse(Path(path).read_text(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if fn not in _CONSTRUCTORS:
            continue
        for kw in node.keywords:
            if kw.arg == "name" and isinstance(kw.value, ast.Constant) and kw.value.value == name:
                lines.append(node.lineno)
    return sorted(lines)


def where(path, name: str, nth: int) -> str:
    """``path:LINE`` of the ``nth`` declaration of ``name`` in ``path`` (just ``path`` if it cannot be found)."""
    lines = declaration_lines(path, name)
    return f"{path}:{lines[nth]}" if nth < len(lines) else str(path)
