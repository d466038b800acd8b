"""Which top-level definitions of a Triton kernel module its launcher can reach: the kernels (and their helpers,
configs, aliases) one TritonKernel actually launches, when a module holds several.

Read from the module's source (no import: the module is imported only once the runner picked its Triton mode): each
top-level function, class and assignment (under a module-level ``if`` / ``try`` / ``with`` too) is a node; its
edges are the names its body, decorators or value mention. :func:`reach` walks them from the launcher. It answers
None, meaning "cannot tell, assume everything", where the launcher is not defined in the module's source or where
what it reaches looks names up at run time (``getattr``, ``globals()``, ``eval``, ``import_module``,
``sys.modules``): then every definition may run. Used so that one kernel's interpreter gap (Python ``and`` on
blocks, verifier.launch.triton_boolops) or autotune configs (verifier.launch.triton_configs) are not charged to a
sibling kernel of the same module that its launcher never launches.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Optional

_DYNAMIC = {"getattr", "globals", "vars", "locals", "eval", "exec", "__import__", "import_module", "modules"}


def _mentions(node) -> set:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and n.attr in _DYNAMIC:
            out.add(n.attr)
    return out


def _collect(body, defs: dict) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs.setdefault(node.name, set()).update(_mentions(node))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            used = _mentions(node.value) if node.value is not None else set()
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        defs.setdefault(n.id, set()).update(used)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for field in ("body", "orelse", "finalbody"):
                _collect(getattr(node, field, []) or [], defs)
            for h in getattr(node, "handlers", []) or []:
                _collect(h.body, defs)


@functools.lru_cache(maxsize=64)
def _graph(path: str, mtime: float) -> Optional[dict]:
    try:
        tree = ast.parse(Path(path).read_text(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    defs: dict = {}
    _collect(tree.body, defs)
    return {k: frozenset(v) for k, v in defs.items()}


def reach(path, launcher: str) -> Optional[frozenset]:
    """The module's top-level names the ``launcher`` function can reach (itself included), or None when that
    cannot be told from the source (then assume every definition of the module runs)."""
    if not launcher:
        return None
    p = Path(path)
    try:
        graph = _graph(str(p.resolve()), p.stat().st_mtime)
    except OSError:
        return None
    if not graph or launcher not in graph:
        return None
    seen, stack = set(), [launcher]
    while stack:
        name = stack.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        if graph[name] & _DYNAMIC:
            return None
        stack.extend(graph[name])
    return frozenset(seen)


def mentioned(path, launcher: str) -> Optional[frozenset]:
    """Every name the definitions the ``launcher`` reaches mention, those the module only imports included (a
    library's function or class the launcher calls), or None when :func:`reach` cannot tell."""
    reached = reach(path, launcher)
    if reached is None:
        return None
    p = Path(path)
    graph = _graph(str(p.resolve()), p.stat().st_mtime) or {}
    return frozenset(reached.union(*(graph.get(n, frozenset()) for n in reached)))
