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

An argmax / argmin over a slice that holds only NaN (:data:`ALL_NAN_ARG`): the interpreter computes them with
numpy's nanargmax / nanargmin, which raise on such a slice ("All-NaN slice encountered"), so every launch of a kernel
reducing padding rows of -inf - -inf = NaN crashed (FlagGems' topk_softmax, BLOCK_SIZE_ROWS rows per program, the
padding rows never stored). Compiled Triton's combine (``a > b or (a == b and i < j)``) is false for every NaN pair,
so such a slice gives NaN and an index its reduction order decides. Here the slice gives NaN and its last index (a
left fold of that combine), or its first inside :func:`all_nan_first`; the values step replays such a case with
the other one, and a verdict only one of them gives (a failure or a pass) is a caveat, not a finding or a pass.

A conversion between bfloat16 and any type but float32 (an int32 exponent ``.to(tl.bfloat16)``, a bfloat16 ``.to(tl.uint8)``)
is recorded as bfloat16 arithmetic: the interpreter reinterprets the number as the 16-bit pattern or the reverse
(zero excepted: its bits are +0.0, so a load's ``other=0`` into bfloat16 is right).

A ``tl.assume(cond)`` whose condition is false in some program: the interpreter raises AssertionError('Assume
failed') there, so every case of a kernel assuming ``pid > 0`` (aiter's per-token quant, false in program 0) was a
crash and nothing else of it was checked. Compiled Triton hands the condition to LLVM as a fact (undefined behaviour
where it does not hold, usually harmless). Inside :func:`false_assumptions` such a condition is recorded (the
kernel's source line, the program) and the run goes on: the values step reports it once per dtype as a finding and
judges the values as usual.

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
ALL_NAN_ARG = "argmax of an all-NaN slice"  # recorded for an argmax / argmin over a slice holding only NaN
_FP8 = {"fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}  # Triton's name -> ours (and ml_dtypes')
_faithful = False  # float32 -> bfloat16 conversions round to nearest even (faithful_rounding)
_nan_first = False  # an all-NaN slice's argmax / argmin is its first index (all_nan_first), else its last
_record: Optional[set] = None  # the ops seen since recording() opened, or None when nobody records
_assumes: Optional[dict] = None  # false tl.assume conditions seen since false_assumptions() opened: where -> program
_wrapped = False


def _name(op) -> str:
    return getattr(op, "__name__", None) or str(op)


def _is_bf16(t) -> bool:
    dtype = getattr(t, "dtype", None)
    return str(getattr(dtype, "scalar", dtype)) == "bf16"


def _any_nonzero(data) -> bool:
    import numpy as np

    return bool(np.any(np.asarray(data) != 0))


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
            if (_record is not None and (src_name == "bf16") != (dst_name == "bf16")
                    and "fp32" not in (src_name, dst_name) and _any_nonzero(src.data)):
                # only fp32 <-> bf16 is converted as a value: int32 -7 becomes the bf16 bits 65529 (and bf16 -> int,
                # f16 or f64 reads the bits as a number), then bf16 ops that never reach binary_op (OCP MX's
                # exponent kept in bf16, torchao's FLOOR scale): the conversion itself is the gap. Zero is right
                # either way (bits 0 are +0.0): a load's other=0 into bf16 is not one
                _record.add(f"{src_name}->{dst_name} conversion")
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

    def min_max(orig):
        import warnings

        import numpy as np

        def run(self, input, val_reduce_op, idx_reduce_op=None):
            data = (input[0] if isinstance(input, tuple) else input).handle.data
            if idx_reduce_op is None:  # a max / min: NaN for an all-NaN slice, as compiled; numpy's warning is noise
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    return orig(self, input, val_reduce_op, idx_reduce_op)
            if idx_reduce_op not in (np.nanargmax, np.nanargmin) or np.asarray(data).dtype.kind != "f":
                return orig(self, input, val_reduce_op, idx_reduce_op)
            dead = np.all(np.isnan(data), axis=self.axis, keepdims=True)
            if not dead.any():
                return orig(self, input, val_reduce_op, idx_reduce_op)
            if _record is not None:
                _record.add(ALL_NAN_ARG)
            return _all_nan_min_max(self, input, data, dead, val_reduce_op, idx_reduce_op)
        return run

    def assume(orig):
        import numpy as np

        def create_assume(self, condition):
            if _assumes is None or bool(np.all(np.asarray(condition.data))):
                return orig(self, condition)
            _assumes.setdefault(_kernel_line(), tuple(int(i) for i in (self.grid_idx or (0, 0, 0))))
        return create_assume

    _skip_repatching(interp)
    builder = interp.InterpreterBuilder
    if hasattr(builder, "create_assume"):
        builder.create_assume = assume(builder.create_assume)
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
    reduce_ops = getattr(interp, "ReduceOps", None)
    if reduce_ops is not None and hasattr(reduce_ops, "min_max"):  # argmax / argmin of an all-NaN slice
        reduce_ops.min_max = min_max(reduce_ops.min_max)
    from verifier.launch.interpreter_reduce import install

    install(interp)  # tl.reduce with the kernel's own combine function: a tree over slices, not an element fold
    _wrapped = True


def _all_nan_min_max(ops, input, data, dead, val_reduce_op, idx_reduce_op):
    """ReduceOps.min_max where some slices hold only NaN (``dead``, kept dims): the others as numpy gives them, the
    dead ones NaN and their last index (their first inside all_nan_first)."""
    import numpy as np
    import triton.language as tl

    axis, keep = ops.axis, ops.keep_dims
    filled = np.where(dead, 0, data)
    squeeze = (lambda a: a) if keep else (lambda a: np.squeeze(a, axis=axis) if axis is not None else a.reshape(()))
    n = data.shape[axis] if axis is not None else data.size
    idx = np.where(squeeze(dead), 0 if _nan_first else n - 1, idx_reduce_op(filled, axis=axis, keepdims=keep))
    idx_t = ops.to_tensor(idx.astype(np.int32), tl.int32)
    if not val_reduce_op:
        return idx_t
    val = np.where(squeeze(dead), np.nan, val_reduce_op(filled, axis=axis, keepdims=keep)).astype(data.dtype)
    tensor = input[0] if isinstance(input, tuple) else input
    return ops.to_tensor(val, tensor.dtype), idx_t


@contextlib.contextmanager
def all_nan_first():
    """Inside the block, an argmax / argmin over an all-NaN slice gives its first index (else its last)."""
    global _nan_first
    _wrap_builder()
    before, _nan_first = _nan_first, True
    try:
        yield
    finally:
        _nan_first = before


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


def range_hints(interp) -> bool:
    """A fix for Triton's interpreter (3.9 included), semantics of compiled Triton: ``tl.range(start, end, step,
    num_stages)`` takes its compile hints (num_stages, loop_unroll_factor, ...) positionally too, where the
    interpreter's stand-in for ``tl.range`` takes three ("_new_range() takes from 1 to 3 positional arguments but 4
    were given"): every launch of such a kernel raised InterpreterError (vLLM's gpt-oss router,
    ``tl.range(pid, M, num_programs, num_stages)``), a crash finding on a kernel compiled Triton runs. The hints
    schedule the loop and change no value: past the third, positional arguments are dropped. Installed once, over
    an interpreter whose stand-in takes no more than three positional arguments (the signature is checked where it
    is set); returns whether it was. Called with scalar_index, when a process commits to the interpreter."""
    import inspect

    patch = getattr(interp, "_patch_lang_core", None)
    if patch is None or getattr(patch, "_verifier_range_hints", False):
        return False

    def takes_three(fn) -> bool:
        try:
            ps = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return False
        positional = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return len(positional) == 3 and not any(p.kind == p.VAR_POSITIONAL for p in ps)

    def patch_lang_core(lang, scope, *args, **kwargs):
        out = patch(lang, scope, *args, **kwargs)
        new_range = lang.__dict__.get("range")
        if new_range is not None and takes_three(new_range):
            def range_(arg1, arg2=None, step=None, *hints, **kwargs):
                return new_range(arg1, arg2, step, **kwargs)
            scope.set_attr(lang, "range", range_)  # restored with the rest
        return out

    patch_lang_core._verifier_range_hints = True
    interp._patch_lang_core = patch_lang_core
    return True


def dtype_value(interp) -> bool:
    """A fix for Triton's interpreter (3.9 included), semantics of compiled Triton: a ``@triton.jit`` helper given a
    dtype (``get_dtype_min(inp.type.element_ty)``) receives it as a ``tl.constexpr`` when compiled (the code
    generator wraps every non-tensor argument of a call), so helpers read it as ``dtype.value`` (FlagGems'
    ``get_dtype_min`` / ``get_dtype_max``, used by its argmax, max, min, cumsum kernels); the interpreter calls the
    helper as plain Python with the bare ``tl.dtype``, which has no ``value`` ("'dtype' object has no attribute
    'value'"): a crash finding on every launch of a kernel compiled Triton runs. Here a dtype's ``value`` is the
    dtype itself, as ``tl.constexpr(dtype).value`` is. Installed once, only where ``tl.dtype`` has no ``value`` of
    its own; returns whether it was. Called with scalar_index, when a process commits to the interpreter."""
    dtype = getattr(getattr(interp, "tl", None), "dtype", None)
    if not isinstance(dtype, type) or hasattr(dtype, "value"):
        return False
    dtype.value = property(lambda self: self)
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


@contextlib.contextmanager
def watch():
    """Around one interpreted launch: makes sure the builder is wrapped (records go to the open recording()),
    libdevice's functions with a numpy counterpart run (verifier.launch.libdevice), and a library's
    ``torch.cuda.device(...)`` context selects nothing (no_cuda_device)."""
    from verifier.launch.cpu_device import no_cuda_device
    from verifier.launch.libdevice import libdevice_in_numpy

    _wrap_builder()
    with libdevice_in_numpy(), no_cuda_device():
        yield


def _kernel_line() -> str:
    """'file:line: source' of the innermost frame outside Triton and this package (the kernel's tl.assume)."""
    import os
    import traceback

    import triton

    skip = (os.path.dirname(triton.__file__), os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for fr in reversed(traceback.extract_stack()):
        if not os.path.abspath(fr.filename).startswith(skip):
            return f"{fr.filename}:{fr.lineno}: {(fr.line or '').strip()}"
    return "an unknown line"


@contextlib.contextmanager
def false_assumptions():
    """Yields a dict of the false tl.assume conditions met inside the block ('file:line: source' -> the first
    program meeting it); they do not raise there. Nested blocks share the outer dict."""
    global _assumes
    if _assumes is not None:  # the builder is wrapped by watch(), around every interpreted launch
        yield _assumes
        return
    _assumes = {}
    try:
        yield _assumes
    finally:
        _assumes = None


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


class _LateBuiltin:
    """A module-level alias of a Triton builtin (``triton_cast = tl.cast``, Unsloth's kernels) that looks its name up
    in its language module at each call. The interpreter patches the builtins where a kernel's globals name the
    module (``tl.cast``) for the length of a run; an alias bound at import holds the unpatched function, which
    raises "`_semantic` argument must be provided outside of JIT functions". Compiled Triton resolves the alias
    itself, so this changes nothing the kernel computes; it is installed only on modules loaded for the
    interpreter (verifier.launch.triton.load_module)."""

    def __init__(self, home, attr: str, original):
        self._home, self._attr, self._original = home, attr, original

    def __call__(self, *args, **kwargs):
        return getattr(self._home, self._attr)(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._original, name)


def resolve_builtin_aliases(mod) -> list:
    """Replace each global of ``mod`` that is a triton.language (or triton.language.math) builtin under its own name
    by a _LateBuiltin; returns the names replaced. libdevice functions are not builtins of those modules: their
    interpreter gap stays one (verifier.battery.gate)."""
    import triton.language as tl

    done = []
    for name, value in list(vars(mod).items()):
        if not tl.core.is_builtin(value):
            continue
        attr = getattr(value, "__name__", None)
        for home in (tl, tl.math):
            if attr and getattr(home, attr, None) is value:
                setattr(mod, name, _LateBuiltin(home, attr, value))
                done.append(name)
                break
    return done
