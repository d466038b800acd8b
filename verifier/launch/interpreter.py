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

Conversions to float8 (e4m3fn, e5m2) are recorded apart too (:data:`ROUNDED_FP8`): Triton 3.9's interpreter gets them
wrong even in range (7.98 becomes 4.0, 500 becomes 256, NaN becomes 384 in e4m3fn), where compiled Triton rounds to
nearest even and saturates; :func:`faithful_rounding` converts them so as well.

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
ROUNDED_FP8 = "conversion to fp8"  # recorded for a float -> float8 (e4m3fn, e5m2) conversion
_FP8 = {"fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}  # Triton's name -> ours (and ml_dtypes')
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
            src_name, dst_name = str(getattr(src.dtype, "scalar", src.dtype)), str(dst_type.scalar)
            if src_name == "fp32" and dst_name == "bf16":
                if _record is not None:
                    _record.add(ROUNDED)
                if _faithful:
                    return _to_bf16_nearest(interp, src, dst_type)
            return orig(self, src, dst_type)
        return cast_impl

    def fp_to_fp(orig):
        def create_fp_to_fp(self, src, dst_type, rounding_mode):
            src_name, dst_name = str(getattr(src.dtype, "scalar", src.dtype)), str(dst_type.scalar)
            nearest = rounding_mode is None or "RTNE" in str(rounding_mode)  # an explicit rtz is left as asked
            if dst_name in _FP8 and src_name in ("fp32", "fp16", "bf16") and nearest:
                if _record is not None:
                    _record.add(ROUNDED_FP8)
                if _faithful:
                    return _to_fp8_nearest(interp, src, src_name, dst_type, dst_name)
            return orig(self, src, dst_type, rounding_mode)
        return create_fp_to_fp

    _skip_repatching(interp)
    builder = interp.InterpreterBuilder
    for name in ("unary_op", "binary_op", "ternary_op"):
        if hasattr(builder, name):
            setattr(builder, name, elementwise(getattr(builder, name)))
    if hasattr(builder, "cast_impl"):  # create_fp_trunc and implicit casts at a store go through it
        builder.cast_impl = cast(builder.cast_impl)
    if hasattr(builder, "create_fp_to_fp"):  # conversions to and from float8
        builder.create_fp_to_fp = fp_to_fp(builder.create_fp_to_fp)
    for cls, what in (("ReduceOps", "reduction"), ("ScanOps", "scan")):
        klass = getattr(interp, cls, None)
        if klass is not None and hasattr(klass, "apply"):
            klass.apply = reduction(klass.apply, what)
    _wrapped = True


_OLD_INDEX = 'scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))'


def scalar_index(interp) -> bool:
    """A fix of Triton's own (from 3.9) for older interpreters, semantics of compiled Triton: a scalar is used as
    an int (``range(0, n_cols, BLOCK)`` over an int argument, a list index) through ``__index__``, which Triton
    <= 3.6 reads as ``int(self.handle.data)``; the interpreter keeps a scalar as a one-element 1-D array, and NumPy
    2.x refuses ``int()`` of one ("only 0-dimensional arrays can be converted to Python scalars"). Every launch
    of such a kernel then raised InterpreterError: Liger's cross entropy on the H200's Triton 3.6 (2026-12-02),
    a crash finding on a kernel that compiled Triton runs. Triton 3.9 reads ``int(self.handle.data.squeeze())``,
    as this does: an array of more than one element still raises. Installed only over the code it was written
    for (the line is found in the source of ``_patch_lang_tensor``); returns whether it was. Called once, when a
    process commits to the interpreter (verifier.launch.triton.activate, which every kernel module's load runs)."""
    import inspect

    patch = getattr(interp, "_patch_lang_tensor", None)
    if patch is None or getattr(patch, "_verifier_scalar_index", False):
        return False
    try:
        src = inspect.getsource(patch)
    except (OSError, TypeError):
        return False
    if _OLD_INDEX not in src:
        return False

    def patch_lang_tensor(tensor, scope, *args, **kwargs):
        out = patch(tensor, scope, *args, **kwargs)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))  # restored with the rest
        return out

    patch_lang_tensor._verifier_scalar_index = True
    interp._patch_lang_tensor = patch_lang_tensor
    return True


TRITON_CALLS: dict = {}  # Triton's own InterpretedFunction.__call__ ('device') and GridExecutor.__call__ ('grid')
_patched: list = []  # per grid run in progress (innermost last): the triton.language modules patched in it


def _lang_modules(fn, interp) -> frozenset:
    """The modules Triton's _patch_lang patches for ``fn``: triton.language and triton.language.core, where its
    globals name them."""
    tl = interp.tl
    return frozenset(id(v) for v in fn.__globals__.values() if v is tl or v is tl.core)


def _skip_repatching(interp) -> None:
    """Speed only, not semantics. Triton 3.x's interpreter runs a kernel's call of another ``@triton.jit``
    function (a device function: InterpretedFunction.__call__) by first patching triton.language again
    (_patch_lang: inspect.getmembers over tl, tl.core, tl.tensor and tl.math, ~1.5 ms), although the grid run
    around it (GridExecutor.__call__) patched those modules already and restores them when it ends. Here that
    second patch is left out when the function's language modules were already patched in this grid run (by the
    run itself, or by an earlier device call, whose patch Triton never undoes): it would set the same attributes
    to equivalent functions (the builtins are already replaced, so it skips them). Kernels
    calling helpers in loops spent most of their interpreted time there (suites/test_ops.py: about 40 % of it).
    Installed only over the code it was written for (the source of __call__ is checked); otherwise Triton's own
    path runs unchanged."""
    import inspect

    fn_cls, grid_cls = getattr(interp, "InterpretedFunction", None), getattr(interp, "GridExecutor", None)
    if fn_cls is None or grid_cls is None or not hasattr(interp, "InterpreterError") or not hasattr(interp, "tl"):
        return
    try:
        src = inspect.getsource(fn_cls.__call__)
    except (OSError, TypeError):
        return
    body = [ln.strip() for ln in src.splitlines()[1:] if ln.strip() and not ln.strip().startswith("#")]
    if body != ["_patch_lang(self.fn)", "fn = self.rewrite()", "try:", "return fn(*args, **kwargs)",
                "except Exception as e:", "raise InterpreterError(repr(e)) from e"]:
        return
    device_call, grid_call = fn_cls.__call__, grid_cls.__call__
    TRITON_CALLS.update(device=device_call, grid=grid_call)

    def call(self, *args, **kwargs):
        langs = _lang_modules(self.fn, interp)
        if not langs or not _patched or not langs <= _patched[-1]:  # (none: Triton's own assertion says so)
            if _patched:  # Triton patches them now and never restores that patch (the grid run's end restores
                _patched[-1] |= langs  # what it patched itself): patched for the rest of this grid run
            return device_call(self, *args, **kwargs)
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise interp.InterpreterError(repr(e)) from e

    def run_grid(self, *args, **kwargs):
        _patched.append(set(_lang_modules(self.fn, interp)))
        try:
            return grid_call(self, *args, **kwargs)
        finally:
            _patched.pop()

    fn_cls.__call__, grid_cls.__call__ = call, run_grid


def _to_bf16_nearest(interp, src, dst_type):
    import ml_dtypes
    import numpy as np

    data = np.asarray(src.data, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    return interp.TensorHandle(data, dst_type.scalar)


def _to_fp8_nearest(interp, src, src_name, dst_type, dst_name):
    """float -> float8 as compiled Triton converts on sm_89+ (``cvt.rn.satfinite``): to nearest even, a finite or
    infinite value past the format's max saturating to it, NaN kept (the quantized formats' own rounding,
    verifier.numerics.quantized). Triton 3.9's interpreter gets even in-range values wrong (7.98 -> 4.0 in e4m3fn,
    NaN -> 384; tests/test_interpreter_caveats.py)."""
    import ml_dtypes
    import numpy as np

    from verifier.numerics.quantized import fmt

    data = np.asarray(src.data)
    x = data.view(ml_dtypes.bfloat16).astype(np.float32) if src_name == "bf16" else data.astype(np.float32)
    name = _FP8[dst_name]
    q = fmt(name).quantize(x)
    q = np.where(q == 0, np.copysign(0.0, x), q)  # the grid holds one zero; the conversion keeps the sign
    return interp.TensorHandle(q.astype(getattr(ml_dtypes, name)).view(np.uint8), dst_type.scalar)


@contextlib.contextmanager
def faithful_rounding():
    """Inside the block, the interpreter's float32 -> bfloat16 conversions round to nearest even, and its
    conversions to float8 round to nearest even and saturate, as compiled Triton's do."""
    global _faithful
    _wrap_builder()
    before, _faithful = _faithful, True
    try:
        yield
    finally:
        _faithful = before


def _round_half_away(x):
    import numpy as np

    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype)  # x - t is exact: no double rounding


def _exact_fns() -> dict:
    """libdevice's exactly defined rounding functions (float in, the same float type out): every implementation
    gives the same bits, so numpy's are compiled Triton's (``round`` is roundf, ties away from zero; ``rint`` and
    ``nearbyint`` are ties to even)."""
    import numpy as np

    return {"round": _round_half_away, "rint": np.rint, "nearbyint": np.rint, "trunc": np.trunc,
            "floor": np.floor, "ceil": np.ceil}


_LIBDEVICE_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                      "triton.language.extra.hip.libdevice")


def _interpreted(name, fn, orig):
    """A libdevice function the interpreter runs: ``fn`` on the data of a float32 / float64 tensor, ``orig`` (the
    interpreter's own gap) for anything else."""
    import numpy as np
    import triton.runtime.interpreter as interp

    def run(arg0, *args, **kwargs):
        h = getattr(arg0, "handle", None)
        data = getattr(h, "data", None)
        if args or not isinstance(data, np.ndarray) or data.dtype not in (np.float32, np.float64):
            return orig(arg0, *args, **kwargs)
        with np.errstate(invalid="ignore"):
            out = np.asarray(fn(data), dtype=data.dtype)
        return interp.tl.core.tensor(interp.TensorHandle(out, h.dtype), arg0.type)

    run.__name__ = name
    return run


_originals: dict = {}  # id -> (name, libdevice function): the exactly defined ones, as Triton defines them
_bindings: list = []  # (module, global name, original) of every module binding one of them
_scanned = [0]  # len(sys.modules) when _bindings was last computed


def _libdevice_bindings() -> list:
    """Where the exactly defined libdevice functions are bound: their own modules and every module that imported
    one by name or aliased it (``tl_round = tl.extra.cuda.libdevice.round``, lmdeploy's pattern). sys.modules is
    scanned again only when modules were loaded since (a kernel module is, before its first launch)."""
    import importlib
    import sys

    if not _originals:
        for mod_name in _LIBDEVICE_MODULES:
            try:
                mod = importlib.import_module(mod_name)
            except ImportError:
                continue
            for name in _exact_fns():
                orig = getattr(mod, name, None)
                if orig is not None and getattr(orig, "__name__", "") == name:
                    _originals[id(orig)] = (name, orig)
    if len(sys.modules) != _scanned[0]:
        found = []
        for m in list(sys.modules.values()):
            d = getattr(m, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for k, v in list(d.items()):
                hit = _originals.get(id(v))
                if hit is not None and hit[1] is v:
                    found.append((m, k, v))
        _bindings[:] = found
        _scanned[0] = len(sys.modules)
    return _bindings


@contextlib.contextmanager
def exact_libdevice():
    """Inside the block, libdevice's exactly defined functions (round, rint, nearbyint, trunc, floor, ceil) run in
    the interpreter, which otherwise leaves every libdevice function unimplemented (a stub returning None, or the
    bare extern raising): a kernel rounding with ``libdevice.round(x).to(tl.int8)`` (vLLM's int8 quantizers) is
    then checked on the CPU, not an interpreter gap. Every binding is replaced: the module attributes
    (``tl.extra.cuda.libdevice.round``) and names a module imported or aliased (``tl_round = ...round``).
    Approximate functions (rsqrt, exp, tanh) keep the gap: their error is the implementation's."""
    fns = _exact_fns()
    saved = []
    for mod, name, orig in _libdevice_bindings():
        saved.append((mod, name, orig))
        setattr(mod, name, _interpreted(_originals[id(orig)][0], fns[_originals[id(orig)][0]], orig))
    try:
        yield
    finally:
        for mod, name, orig in reversed(saved):
            setattr(mod, name, orig)


@contextlib.contextmanager
def watch():
    """Around one interpreted launch: makes sure the builder is wrapped (records go to the open recording()) and
    libdevice's exactly defined functions run (exact_libdevice)."""
    _wrap_builder()
    with exact_libdevice():
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
