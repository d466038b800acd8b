"""Module globals a ``@triton.jit`` function reads that compiled Triton refuses: seen on a CPU, where the
interpreter runs them.

Compiled Triton (3.2 on) lets a jit function read a module global only when it is a ``tl.constexpr(...)`` (or a
module, a jit function, a dtype, ...): ``LOG2E = 1.4427`` read inside a kernel is a ``NameError`` at compile time
("Cannot access global variable LOG2E from within @jit'ed function"), so the kernel never runs on a GPU. The
interpreter runs the function as Python and reads it happily: a CPU check would pass a kernel that cannot compile.

:func:`plain_globals` reads the module's source (no import) and finds, in each ``jit`` function the launcher can
reach (verifier.launch.triton_reach), the names it reads that the module binds only by a plain top-level assignment
of something other than a ``constexpr(...)`` call: numbers, strings, tuples, arithmetic on them. Names bound by
imports, ``def`` or ``class`` (and names the function binds itself) are left alone: what they hold is not known
without importing. A read under an ``if`` on a constexpr parameter is compiled only for some values of it: it is
said as such (a warning), a read elsewhere is certain (an error).
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from verifier.launch.triton_boolops import constexpr_params, is_jit


def _plain_assigned(tree: ast.Module) -> set:
    """Top-level names bound only by plain assignments of non-constexpr values."""
    plain, other = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            call = node.value.func if isinstance(node.value, ast.Call) else None
            constexpr = call is not None and (getattr(call, "attr", None) or getattr(call, "id", None)) == "constexpr"
            (other if constexpr or not _literal(node.value) else plain).update(names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            other.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(node.name)
        elif not isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)):
            for n in ast.walk(node):  # bound under an if / try / for at the top: not followed
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    other.add(n.id)
    return plain - other


def _literal(e) -> bool:
    """A value built from literals alone (what a kernel's constant is): 1.4427, 2 ** 14, -1, (1, 2), "x"."""
    return all(isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.operator,
                              ast.unaryop, ast.Load)) for n in ast.walk(e))


def _local_names(fn: ast.FunctionDef) -> set:
    out = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    out |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return out


def _reads(body, constexpr: set, under: bool, out: list) -> None:
    """(name, line, under a constexpr if) for every Name read in ``body``."""
    for node in body:
        if isinstance(node, ast.If):
            static = bool({n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)} & constexpr)
            _reads([node.test], constexpr, under, out)
            _reads(node.body, constexpr, under or static, out)
            _reads(node.orelse, constexpr, under or static, out)
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                out.append((child.id, child.lineno, under))
            elif isinstance(child, ast.AST):
                _reads([child], constexpr, under, out)


@functools.lru_cache(maxsize=64)
def _scan(path: str, mtime: float) -> tuple:
    try:
        tree = ast.parse(Path(path).read_text(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return ()
    plain, out = _plain_assigned(tree), []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or not is_jit(fn):
            continue
        local, reads = _local_names(fn), []
        _reads(fn.body, constexpr_params(fn), False, reads)
        seen = set()
        for name, line, under in reads:
            if name in plain and name not in local and name not in seen:
                seen.add(name)
                out.append((fn.name, name, f"{Path(path).name}:{line}", under))
    return tuple(out)


def refuses_plain_globals() -> bool:
    """Whether the installed Triton's code generator refuses non-constexpr globals (3.2 on)."""
    try:
        from triton.compiler.code_generator import CodeGenerator
    except ImportError:
        return False
    return hasattr(CodeGenerator, "_is_constexpr_global")


def plain_globals(path, launcher: str = "") -> tuple:
    """(function, global, file:line, only under a constexpr branch) for the reads compiled Triton refuses in the
    ``@triton.jit`` functions of the module at ``path`` that ``launcher`` can reach (all, when that cannot be
    told)."""
    from verifier.launch.triton_reach import reach

    p = Path(path)
    try:
        mtime = p.stat().st_mtime
    except OSError:
        return ()
    reached = reach(p, launcher)
    return tuple(r for r in _scan(str(p.resolve()), mtime) if reached is None or r[0] in reached)
