"""Python ``and`` / ``or`` between block tensors in a Triton kernel's source: an interpreter gap.

Compiled Triton turns ``a and b`` inside a ``@triton.jit`` function into an element-wise logical and (``a or b``
into a logical or). The interpreter (TRITON_INTERPRET=1) runs the function as Python, where ``a and b`` is
``b`` whenever ``a`` is truthy, as a block tensor always is (Triton 3.9: ``(o < 2) and (o < 6)`` gives ``o < 6``):
a mask built that way lets loads and stores run past the row, reading or writing memory the kernel never touches
when compiled, which can kill the process. So such a kernel's interpreted run says nothing about it.

:func:`tensor_boolops` reads the module's source (no import: the module is imported only once the runner picked
its Triton mode) and finds, in each function decorated with ``jit``, the ``and`` / ``or`` expressions an operand
of which is a block: computed (through the function's own assignments) from ``tl.arange``, ``tl.zeros``,
``tl.full`` or a block pointer (a load through a block of pointers is a block, ``tl.load(ptr)`` a scalar).
Operands that are constexpr parameters, scalars (``tl.program_id``, a plain argument, a reduction) or Python
values are left alone: ``and`` on them means the same in both. Only the functions the kernel's launcher can reach
count (verifier.launch.triton_reach): a sibling kernel of the same module it never launches leaves its run alone.
Not read: kernels in modules the launcher imports, and blocks a helper receives as arguments (their gap then shows
as it always did).
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

_BLOCK_CALLS = {"arange", "zeros", "full", "make_block_ptr"}  # blocks from scalars; other ops (tl.load, tl.where,
# x.to(...), a helper) give a block when an operand is one: tl.load(ptr) of a scalar pointer is a scalar

_REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "program_id", "num_programs"}


def is_jit(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "jit":
            return True
    return False


def constexpr_params(fn: ast.FunctionDef) -> set:
    out = set()
    for a in fn.args.args + fn.args.kwonlyargs:
        ann = a.annotation
        if ann is not None and "constexpr" in ast.unparse(ann):
            out.add(a.arg)
    return out


class _Blocks(ast.NodeVisitor):
    """Names a function assigns from block expressions (one pass in source order, then to a fixpoint)."""

    def __init__(self, constexpr: set):
        self.constexpr = constexpr
        self.blocks: set = set()

    def is_block(self, e) -> bool:
        if isinstance(e, ast.Name):
            return e.id in self.blocks
        if isinstance(e, ast.Call):
            f = e.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in _BLOCK_CALLS:
                return True
            if name in _REDUCTIONS:  # tl.sum(x) of a 1-D block is a scalar (with axis=, a block: not followed)
                return False
            if isinstance(f, ast.Attribute) and self.is_block(f.value):  # x.to(...), x.reshape(...)
                return True
            return any(self.is_block(a) for a in e.args)  # a helper or tl op of a block gives a block
        if isinstance(e, (ast.BinOp,)):
            return self.is_block(e.left) or self.is_block(e.right)
        if isinstance(e, ast.UnaryOp):
            return self.is_block(e.operand)
        if isinstance(e, ast.Compare):
            return self.is_block(e.left) or any(self.is_block(c) for c in e.comparators)
        if isinstance(e, ast.BoolOp):
            return any(self.is_block(v) for v in e.values)
        if isinstance(e, ast.Subscript):
            return self.is_block(e.value)
        if isinstance(e, ast.IfExp):
            return self.is_block(e.body) or self.is_block(e.orelse)
        if isinstance(e, ast.Attribute):
            return self.is_block(e.value) and e.attr in ("T",)
        return False

    def solve(self, fn: ast.FunctionDef) -> None:
        assigns = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                assigns.append((node.targets, node.value))
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                assigns.append(([node.target], node.value))
        changed = True
        while changed:
            changed = False
            for targets, value in assigns:
                if not self.is_block(value):
                    continue
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id not in self.blocks and n.id not in self.constexpr:
                            self.blocks.add(n.id)
                            changed = True


@functools.lru_cache(maxsize=64)
def _scan(path: str, mtime: float) -> tuple:
    try:
        tree = ast.parse(Path(path).read_text(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return ()
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or not is_jit(fn):
            continue
        blocks = _Blocks(constexpr_params(fn))
        blocks.solve(fn)
        for node in ast.walk(fn):
            if isinstance(node, ast.BoolOp) and any(blocks.is_block(v) for v in node.values):
                op = "and" if isinstance(node.op, ast.And) else "or"
                text = ast.unparse(node)
                out.append((fn.name, f"`{text if len(text) <= 60 else text[:57] + '...'}` ({op}) in {fn.name}, "
                                     f"{Path(path).name}:{node.lineno}"))
    return tuple(out)


def tensor_boolops(path, launcher: str = "") -> tuple:
    """Where the ``@triton.jit`` functions of the module at ``path`` use ``and`` / ``or`` on a block tensor: those
    the ``launcher`` can reach (verifier.launch.triton_reach; all of them when that cannot be told)."""
    from verifier.launch.triton_reach import reach

    p = Path(path)
    try:
        mtime = p.stat().st_mtime
    except OSError:
        return ()
    reached = reach(p, launcher)
    return tuple(text for fn, text in _scan(str(p.resolve()), mtime) if reached is None or fn in reached)
