"""Where in a spec file a kernel is declared: for messages that must point at a line (duplicate names)."""
from __future__ import annotations

import ast
from pathlib import Path

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
