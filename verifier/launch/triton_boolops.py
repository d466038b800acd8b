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

:func:`compiled_boolops` closes the gap where it can: it extends the interpreter's source rewriting (Triton's
``FunctionRewriter``) so that ``and`` / ``or`` / ``not`` run as compiled Triton's code generator runs them
(``visit_BoolOp`` / ``_apply_boolean_values``, ``visit_UnaryOp`` in triton/compiler/code_generator.py). Once it is
installed (:func:`rewrites_boolops`), the scan's findings it rewrites are no gap; one it cannot rewrite (a walrus
in an operand past the first, which a lambda would bind in its own scope) still is.
"""
from __future__ import annotations

import ast
import functools
import sys
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
                                     f"{Path(path).name}:{node.lineno}", rewritable(node)))
    return tuple(out)


def tensor_boolops(path, launcher: str = "", rewritten: bool = False) -> tuple:
    """Where the ``@triton.jit`` functions of the module at ``path`` use ``and`` / ``or`` on a block tensor: those
    the ``launcher`` can reach (verifier.launch.triton_reach; all of them when that cannot be told). ``rewritten``:
    the interpreter runs them as compiled Triton (:func:`rewrites_boolops`), so only those it cannot rewrite."""
    from verifier.launch.triton_reach import reach

    p = Path(path)
    try:
        mtime = p.stat().st_mtime
    except OSError:
        return ()
    reached = reach(p, launcher)
    return tuple(text for fn, text, ok in _scan(str(p.resolve()), mtime)
                 if (reached is None or fn in reached) and not (rewritten and ok))


# ---- the fix: `and` / `or` / `not` in the interpreter as compiled Triton runs them --------------------------------
BOOLOP = "_verifier_boolop"  # the names the rewritten source calls (set in each kernel module's globals)
NOT = "_verifier_not"


def rewritable(node: ast.BoolOp) -> bool:
    """Whether :func:`compiled_boolops` rewrites the expression: operands past the first become lambdas, and a
    walrus in one would bind in the lambda's scope instead of the function's."""
    return not any(isinstance(n, ast.NamedExpr) for v in node.values[1:] for n in ast.walk(v))


def _boolop(tensor):
    def boolop(method: str, first, *rest):
        """Compiled Triton's ``_apply_boolean_values``: operands run in order; a non-tensor one (Python value,
        constexpr) that decides the result (falsy for and, truthy for or) is the result, and the rest never runs;
        others are dropped. Tensors (scalars too) combine with logical_and / logical_or, element-wise, right to
        left; with none, the last value is the result (Python's own answer then)."""
        tensors, value = [], first
        for i in range(len(rest) + 1):
            value = first if i == 0 else rest[i - 1]()
            if isinstance(value, tensor):
                tensors.append(value)
            elif bool(value) is (method == "logical_or"):
                return value
        if not tensors:
            return value
        while len(tensors) >= 2:
            rhs, lhs = tensors.pop(), tensors.pop()
            tensors.append(getattr(lhs, method)(rhs))
        return tensors[0]
    return boolop


def _not(tensor):
    def not_(value):
        """Compiled Triton's ``not``: a tensor's ``__not__`` (element-wise), Python's ``not`` otherwise (the
        interpreter's ``not`` of a block is one Python bool)."""
        return value.__not__() if isinstance(value, tensor) else not value
    return not_


def _native(transformer) -> bool:
    """Whether Triton's own interpreter rewrites ``and`` / ``or`` (a release that closes the gap itself)."""
    return any("visit_BoolOp" in vars(c) for c in type(transformer).__mro__
               if c not in (ast.NodeTransformer, ast.NodeVisitor, object) and not getattr(c, "_verifier_boolops", False))


def compiled_boolops(interp) -> bool:
    """A fix for Triton's interpreter (3.9 included), semantics of compiled Triton: the interpreter runs a kernel's
    ``a and b`` as Python, which is ``b`` for a block ``a`` (a mask ``(o < N) and (o < BLOCK)`` reads past the row:
    FlagGems' argmax, max, min), and ``not block`` as one Python bool; compiled Triton combines tensors with
    logical_and / logical_or and negates them element-wise. Here the interpreter's AST transformer (a subclass of
    Triton's, so its own rewrites stay) turns ``a and b`` into ``_verifier_boolop("logical_and", a, lambda: b)``
    and ``not a`` into ``_verifier_not(a)``. Installed once, only over an interpreter whose transformer has no
    ``visit_BoolOp`` of its own and whose rewriter is the one it was written for (``ast_transformer``,
    ``_compile_and_exec``); returns whether it was. Called with scalar_index, when a process commits to the
    interpreter (verifier.launch.triton.activate), before any kernel is rewritten."""
    rewriter = getattr(interp, "FunctionRewriter", None)
    tensor = getattr(getattr(interp, "tl", None), "tensor", None)
    current = getattr(rewriter, "ast_transformer", None)
    if (not isinstance(current, ast.NodeTransformer) or not isinstance(tensor, type)
            or not callable(getattr(rewriter, "_compile_and_exec", None))):
        return False
    if getattr(current, "_verifier_boolops", False) or _native(current):
        return False

    def visit_BoolOp(self, node):
        node = self.generic_visit(node)
        if not rewritable(node):
            return node
        method = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        lazy = [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                           body=v) for v in node.values[1:]]
        call = ast.Call(func=ast.Name(id=BOOLOP, ctx=ast.Load()), args=[ast.Constant(method), node.values[0], *lazy],
                        keywords=[])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(ast.Call(func=ast.Name(id=NOT, ctx=ast.Load()), args=[node.operand], keywords=[]),
                                 node)

    cls = type(f"Compiled{type(current).__name__}", (type(current),),
               {"visit_BoolOp": visit_BoolOp, "visit_UnaryOp": visit_UnaryOp, "_verifier_boolops": True})
    helpers = {BOOLOP: _boolop(tensor), NOT: _not(tensor)}
    compile_and_exec = rewriter._compile_and_exec

    def _compile_and_exec(self, transformed_ast):
        for name, fn in helpers.items():  # where the rewritten source runs (Triton adds its own names there too)
            self.fn.__globals__.setdefault(name, fn)
        return compile_and_exec(self, transformed_ast)

    rewriter._compile_and_exec = _compile_and_exec
    rewriter.ast_transformer = cls()
    return True


def rewrites_boolops() -> bool:
    """Whether this process's Triton interpreter runs ``and`` / ``or`` on tensors as compiled Triton does: the fix
    above installed, or Triton's own. False while the interpreter is not imported (the gap is then reported)."""
    interp = sys.modules.get("triton.runtime.interpreter")
    transformer = getattr(getattr(interp, "FunctionRewriter", None), "ast_transformer", None)
    if not isinstance(transformer, ast.NodeTransformer):
        return False
    return bool(getattr(transformer, "_verifier_boolops", False)) or _native(transformer)
