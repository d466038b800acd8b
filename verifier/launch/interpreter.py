"""What the Triton interpreter computes differently from compiled Triton, seen while a kernel runs in it.

The interpreter (TRITON_INTERPRET=1) evaluates a kernel's ops in numpy. It keeps bfloat16 tensors as their raw
16-bit patterns (numpy has no bfloat16), and its arithmetic, comparisons and reductions then work on those
integers: in Triton 3.9, 1 + 1 in bfloat16 gives 1.7e38 and (x * 0.5).to(bfloat16) * w gives 1e25 where -0.163
is right. Compiled Triton computes them correctly. So a bfloat16 result of a kernel that did such arithmetic
says nothing about the kernel.

:func:`watch` (the Triton runner wraps every interpreted launch in it) records each such op: the interpreter's
builder and its reduce / scan implementations are wrapped once, and record only while a :func:`recording` is
open. verifier.battery.gate turns a record into an interpreter caveat (a note and a skipped cell, never the
kernel's finding). Selections (``where``) and bitwise ops do not read the value and are not recorded.

Conversions from float32 to bfloat16 are recorded apart (:data:`ROUNDED`): the interpreter rounds them toward
zero, where compiled Triton rounds to nearest even, so a kernel that rounds to bfloat16 twice (x·rstd rounded
before the weight multiply) can be 3 ULPs off in the interpreter and within 2 compiled. :func:`faithful_rounding`
makes those conversions round to nearest even (ml_dtypes); the values step replays a failing case under it
(verifier.battery.values), so only a failure the interpreter's rounding alone produces becomes a caveat.
"""
from __future__ import annotations

import contextlib
from typing import Optional

_SAFE = {"where", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}
ROUNDED = "fp32->bf16 conversion"  # recorded for a float32 -> bfloat16 conversion (not arithmetic)
_faithful = False  # float32 -> bfloat16 conversions round to nearest even (faithful_rounding)
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

    def cast(orig):
        def cast_impl(self, src, dst_type):
            if str(getattr(src.dtype, "scalar", src.dtype)) == "fp32" and str(dst_type.scalar) == "bf16":
                if _record is not None:
                    _record.add(ROUNDED)
                if _faithful:
                    return _to_bf16_nearest(interp, src, dst_type)
            return orig(self, src, dst_type)
        return cast_impl

    builder = interp.InterpreterBuilder
    for name in ("unary_op", "binary_op", "ternary_op"):
        if hasattr(builder, name):
            setattr(builder, name, elementwise(getattr(builder, name)))
    if hasattr(builder, "cast_impl"):  # create_fp_trunc and implicit casts at a store go through it
        builder.cast_impl = cast(builder.cast_impl)
    for cls, what in (("ReduceOps", "reduction"), ("ScanOps", "scan")):
        klass = getattr(interp, cls, None)
        if klass is not None and hasattr(klass, "apply"):
            klass.apply = reduction(klass.apply, what)
    _wrapped = True


def _to_bf16_nearest(interp, src, dst_type):
    import ml_dtypes
    import numpy as np

    data = np.asarray(src.data, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    return interp.TensorHandle(data, dst_type.scalar)


@contextlib.contextmanager
def faithful_rounding():
    """Inside the block, the interpreter's float32 -> bfloat16 conversions round to nearest even, as compiled
    Triton's do."""
    global _faithful
    _wrap_builder()
    before, _faithful = _faithful, True
    try:
        yield
    finally:
        _faithful = before


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
