"""What the Triton interpreter computes differently from compiled Triton, seen while a kernel runs in it.

The interpreter (TRITON_INTERPRET=1) evaluates a kernel's ops in numpy. It keeps bfloat16 tensors as their raw
16-bit patterns (numpy has no bfloat16), and its arithmetic, comparisons and reductions then work on those
integers: in Triton 3.9, 1 + 1 in bfloat16 gives 1.7e38 and (x * 0.5).to(bfloat16) * w gives 1e25 where -0.163
is right. Compiled Triton computes them correctly. So a bfloat16 result of a kernel that did such arithmetic
says nothing about the kernel.

:func:`watch` (the Triton runner wraps every interpreted launch in it) records each such op: the interpreter's
builder and its reduce / scan implementations are wrapped once, and record only while a :func:`recording` is
open. verifier.battery.gate turns a record into an interpreter caveat (a note and a skipped cell, never the
kernel's finding). Conversions to and from bfloat16 are exact in the interpreter and are not recorded, nor are
selections (``where``) and bitwise ops, which do not read the value.
"""
from __future__ import annotations

import contextlib
from typing import Optional

_SAFE = {"where", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}
_record: Optional[set] = None  # the ops seen since recording() opened, or None when nobody records
_wrapped = False


def _name(op) -> str:
    return getattr(op, "__name__", None) or str(op)


def _is_bf16(t) -> bool:
    dtype = getattr(t, "dtype", None)
    return str(getattr(dtype, "scalar", dtype)) == "bf16"


def _wrap_builder() -> None:
    """Wrap the interpreter's element-wise ops and its reductions / scans, once per process."""
    global _wrapped
    if _wrapped:
        return
    import triton.runtime.interpreter as interp

    def elementwise(orig):
        def run(self, *args):
            if _record is not None and _name(args[-1]) not in _SAFE and any(_is_bf16(a) for a in args[:-1]):
                _record.add(_name(args[-1]))
            return orig(self, *args)
        return run

    def reduction(orig, what):
        def apply(self, input):
            if _record is not None and any(_is_bf16(t) for t in (input if isinstance(input, tuple) else (input,))):
                _record.add(what)
            return orig(self, input)
        return apply

    builder = interp.InterpreterBuilder
    for name in ("unary_op", "binary_op", "ternary_op"):
        if hasattr(builder, name):
            setattr(builder, name, elementwise(getattr(builder, name)))
    for cls, what in (("ReduceOps", "reduction"), ("ScanOps", "scan")):
        klass = getattr(interp, cls, None)
        if klass is not None and hasattr(klass, "apply"):
            klass.apply = reduction(klass.apply, what)
    _wrapped = True


@contextlib.contextmanager
def watch():
    """Around one interpreted launch: makes sure the builder is wrapped (records go to the open recording())."""
    _wrap_builder()
    yield


@contextlib.contextmanager
def recording():
    """Yields the set of bfloat16 ops (numpy names: 'add', 'multiply', 'fmax', 'reduction', ...) the interpreter
    executed on raw bit patterns inside the block. Nested recordings share the outer set."""
    global _record
    if _record is not None:
        yield _record
        return
    _record = set()
    try:
        yield _record
    finally:
        _record = None
