"""The per-case gate: whether one input of one kernel and dtype is run, and if not, why — the same answer for
``verifier check`` (a note, the case not run) and the pytest plugin (the test skipped with the same words).

In order: the kernel's ``supports()`` (refused by design), the case's memory layout (verifier.inputs.layouts: a
strided case for a kernel declaring ``layout="contiguous"`` or a CUDA kernel whose launches pass no row stride, an
unaligned one for a kernel declaring ``alignment=16``, the large-index case without a GPU holding it), the Triton
interpreter's known gaps (what the interpreter cannot represent is not the kernel's fault; the compiled path on a
GPU checks it), the declared contracts (inputs holding NaN / inf a kernel declares unsupported). Nothing is
dropped silently: each reason is said where the case would have run.

Some interpreter gaps show only once the kernel has run (:func:`after_run`): an exception only the interpreter
raises (a table of known ones, each pinned by tests/test_interpreter_caveats.py), or bfloat16 arithmetic the
interpreter did on raw bit patterns (verifier.launch.interpreter records it). The case is then not judged: it
raises :class:`NotRun`, which every step that runs cases turns into a note (``verifier check``) or a skipped
test (the pytest plugin), and a cell no input ran through is skipped with that reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.declare import contracts as _contracts
from verifier.inputs import layouts as _lay
from verifier.launch.interpreter import ALL_NAN_ARG, ROUNDED, ROUNDED_FP8

REFUSED, INTERPRETER, CONTRACT, DEVICE = "refused", "interpreter", "contract", "device"
TRITON = "triton"  # the installed Triton lacks an API the kernel calls (compiled or interpreted alike)
NO_STRIDE = "not checked: the launch passes no row stride (name one, e.g. 'x.stride', to be checked on strided rows)"


@dataclass(frozen=True)
class Closed:
    """Why a case is not run: ``kind`` (REFUSED, INTERPRETER, CONTRACT) and the words said for it."""

    kind: str  # REFUSED, INTERPRETER, CONTRACT (declared, or a CUDA launch passing no stride), DEVICE
    reason: str  # the bare reason ("not checked: declared nan_inputs=unsupported", supports()'s words, ...)
    text: str  # said of the case: "case NAME (MxN) refused by design: ...", "case NAME not run: ...", ...


def before_inputs(spec, dt, name: str, M: int, N: int, layout=None, device: Optional[str] = None,
                  level: Optional[str] = None) -> Optional[Closed]:
    """The gate before the inputs are drawn: the kernel's supports() (a UserCodeError propagates), the case's
    layout (``layout``, a verifier.inputs.layouts.Layout; ``device``: where it would run), then the memory it needs
    (verifier.battery.memory) against what the machine has. ``level``: the run's level, whose table row says which
    large cases a CPU runs (None: a case asked for by name, or a caller that runs every one)."""
    reason = spec.check_supported(M, N, dt)
    if reason is not None:
        return Closed(REFUSED, reason, f"case {name} ({M}x{N}) refused by design: {reason}")
    layout = layout or _lay.DEFAULT
    strided = layout.kind == _lay.STRIDED or (layout.large and layout.stride)  # a large case's rows may be too
    if strided or layout.kind == _lay.UNALIGNED:
        why = _contracts.layout_excluded(spec, _lay.STRIDED if strided else layout.kind, _itemsizes(spec, dt))
        if why is None and strided and spec.builds_source:  # its launches name strides
            from verifier.launch.cuda import strided_tensors

            why = None if strided_tensors(spec, M, N, dt, spec.op_params()) else NO_STRIDE
        if why is None and layout.large and layout.stride and spec.builds_source:
            why = narrow_stride(spec, M, N, dt)
        if why is not None:
            return Closed(CONTRACT, why, f"case {name} {why}")
    if layout.large and getattr(spec, "output_layout", None):
        closed = _declared_in_large(spec, name, device)
        if closed is not None:
            return closed
    if layout.large:
        why = large_device_reason(spec, dt, M, N, device, layout) or large_level_reason(spec, dt, name, device, level)
    else:  # estimated before anything is allocated: past the machine's memory the case is not run
        from verifier.battery.memory import too_large

        why = too_large(spec, dt, M, N, device)
    if why is not None:
        return Closed(DEVICE, why, f"case {name} ({M}x{N}) not run: {why}")
    return None


def _declared_in_large(spec, name: str, device: Optional[str]) -> Optional[Closed]:
    """Why a large case cannot lay out an output at its declared layout (verifier.declare.out_layouts): the large
    cases put only a 2-D output's rows a stride apart, and only on aliased pages (verifier.launch.large._Mapped)."""
    from verifier.ops import get_op

    op = get_op(spec.op)
    for out, lay in spec.output_layout.items():
        if not lay.in_large_cases(len(op.dims_of(out))):
            why = (f"not checked: output {out!r} is declared {lay!r} (output_layout), which the large cases do not "
                   "lay out (they lay out a 2-D output's rows a stride apart only)")
            return Closed(CONTRACT, why, f"case {name} {why}")
    if device == "cuda":
        from verifier.launch.large import aliased

        if not aliased():
            why = (f"needs the CUDA virtual memory API (aliased pages) for output "
                   f"{', '.join(repr(o) for o in spec.output_layout)} at its declared layout; device 0 has none")
            return Closed(DEVICE, why, f"case {name} not run: {why}")
    return None


def _itemsizes(spec, dt) -> list:
    """Element sizes of the kernel's tensors in ``dt`` (labels in their own dtype)."""
    from verifier.ops import get_op

    op = get_op(spec.op)
    names = [op.input_dtype(t, dt, spec.op_params()) for t in op.inputs] + [op.output_dtype(t, dt, spec.op_params()) for t in op.outputs]
    return [_dt.numpy_dtype(n).itemsize for n in names]


def narrow_stride(spec, M: int, N: int, dt) -> Optional[str]:
    """Why a CUDA kernel cannot be given rows 2^31 or more elements apart: a launch passes a row stride as int32
    (None: every stride it passes is int64)."""
    from verifier.declare.args import as_arg, stride_of
    from verifier.declare.layout import takes_layout
    from verifier.launch.cuda import launches_for, model_layout

    params = spec.op_params()
    try:
        layout = model_layout(spec, M, N, dt, params) if takes_layout(spec.launches) else None
        narrow = set()
        for launch in launches_for(spec, M, N, dt, params, layout):
            for a in launch.args:
                for _, _, v in as_arg(a).leaves():
                    st = stride_of(v)
                    if st is not None and st.kind == "int32":
                        narrow.add(st.tensor)
    except Exception:  # a malformed launch is reported where it is bound
        return None
    if not narrow:
        return None
    return (f"not run: its launches pass the row stride of {', '.join(sorted(narrow))} as int32, which cannot hold "
            "a stride of 2^31 or more (declare Stride(name, 'int64') to be checked on one)")


def large_device_reason(spec, dt, M: int, N: int, device: Optional[str], layout=None) -> Optional[str]:
    """Why the large-index case cannot run here: no GPU, or not enough free memory on it (None: it can). On a CPU a
    Triton kernel runs it in the interpreter on aliased host memory (verifier.launch.large_host.on_host)."""
    from verifier.launch.large import aliased, required_bytes
    from verifier.launch.large_host import drawn_whole, on_host

    if device != "cuda":  # what a GPU with the virtual memory API (aliased pages) would need
        if on_host(spec, device or "cpu"):
            whole = drawn_whole(spec.op, M, N, spec.op_params())
            if whole:  # the host would hold it: gigabytes (the GPU machine's host holds it)
                t, n = whole[0]
                return (f"needs a GPU: on the CPU its input {t!r} ({n} elements) would be drawn whole in host "
                        f"memory ({n * 8 / 1e9:.1f} GB of float64 draws); the large cases draw only data rows sparsely")
            return None
        need = required_bytes(spec.op, dt, M, N, spec.op_params(), mapped=True)
        why = spec.large_on_cpu or (spec.uses_triton and _host_reason())
        return (f"needs a GPU with >= {need / 1e9:.1f} GB free; this run is on {device or 'the CPU'}"
                + (f" ({why})" if why else ""))
    mapped = aliased()
    if not mapped and layout is not None and layout.stride:
        return "needs the CUDA virtual memory API (aliased pages) for rows 2^31 elements apart; device 0 has none"
    need = required_bytes(spec.op, dt, M, N, spec.op_params(), mapped=mapped)
    gb = f"{need / 1e9:.1f} GB"
    from verifier.gpu.probe import free_memory

    free = free_memory()
    if free is not None and free < need:  # other kernels' large cases may hold it: wait for them, alone
        from verifier.gpu import lease

        with lease.exclusive():
            free = free_memory()
    if free is None or free < need:
        have = "no GPU memory information" if free is None else f"{free / 1e9:.1f} GB free"
        return f"needs a GPU with >= {gb} free; device 0 has {have}"
    return None


def large_level_reason(spec, dt, name: str, device: Optional[str], level: Optional[str]) -> Optional[str]:
    """Why a large case the CPU could run is not run at ``level`` (the level table's large_on_cpu columns: the
    interpreter runs a few programs of each case, still up to seconds each), or None."""
    from verifier.results.levels import TABLE

    lv = TABLE.get(level) if level else None
    if device == "cuda" or lv is None or (lv.large_on_cpu is None and not lv.large_on_cpu_first_dtype_only):
        return None
    how = f"--level thorough or --case {name} runs it"
    if lv.large_on_cpu is not None and name not in lv.large_on_cpu:
        return f"at --level {level} a CPU runs {', '.join(lv.large_on_cpu)} of the large cases only; {how}"
    if lv.large_on_cpu_first_dtype_only and spec.dtypes and dt.tag != spec.dtypes[0].tag:
        return f"at --level {level} a CPU runs the large cases on the first dtype ({spec.dtypes[0].tag}) only; {how}"
    return None


def _host_reason() -> str:
    from verifier.launch.host_alias import unsupported_reason

    return unsupported_reason()


def not_sparse(spec, dt, name: str, reason: str) -> Closed:
    """A large case a Triton kernel in the interpreter cannot run on part of its grid (verifier.launch.row_owners):
    not run, with why; a GPU runs every program."""
    why = f"needs a GPU: on the CPU the interpreter runs only the programs owning the judged rows, and {reason}"
    return Closed(DEVICE, why, f"case {name} not run: {why}")


def after_inputs(spec, dt, name: str, xs: dict, device: str) -> Optional[Closed]:
    """The gate on the drawn inputs: interpreter caveats, then declared contracts."""
    caveat = interpreter_caveat(spec, dt, xs, device)
    if caveat:
        return Closed(INTERPRETER, caveat, f"case {name} not run: {caveat}")
    contract = _contracts.excluded(spec, xs)
    if contract:
        return Closed(CONTRACT, contract, f"case {name} {contract}")
    return None


def interpreter_caveat(spec, dt, xs, device) -> Optional[str]:
    """Inputs the Triton interpreter cannot represent faithfully (so a mismatch would be the
    interpreter's, not the kernel's). tests/test_interpreter_caveats.py pins each fact, so a Triton
    release that fixes it fails that test and the caveat can go."""
    gap = interpreter_source_gap(spec, device)
    if gap:
        return gap
    if not spec.interpreted(device) or dt.input != "bfloat16":
        return None
    import ml_dtypes

    tiny = float(ml_dtypes.finfo(ml_dtypes.bfloat16).smallest_normal)
    for name, v in xs.items():
        a = np.abs((v.held() if isinstance(v, _lay.SparseRows) else v).astype(np.float64))  # a large case's too
        if np.any((a > 0) & (a < tiny)):
            return (f"input {name!r} holds bf16 subnormals, which the Triton interpreter decodes wrongly "
                    "(6.5e-39 loads as 1.3e-39); run compiled on a GPU to check them")
    return None


def interpreter_source_gap(spec, device) -> Optional[str]:
    """What the kernel's source does that the Triton interpreter runs differently from compiled Triton, whatever
    the inputs (verifier.launch.triton_boolops: Python ``and`` / ``or`` on block tensors, those the interpreter does
    not rewrite as compiled Triton runs them), or None."""
    if not spec.interpreted(device):
        return None
    from verifier.launch.triton_boolops import rewrites_boolops, tensor_boolops

    rewritten = rewrites_boolops()
    # a TritonKernel's module from its launcher; a callable's library kernels, each from its own file
    where = [w for path, entry in spec.triton_sources() for w in tensor_boolops(path, entry, rewritten)]
    if not where:
        return None
    more = f" and {len(where) - 1} more" if len(where) > 1 else ""
    left = (" (the verifier's rewrite of `and` / `or` leaves it to Python: a walrus `:=` in an operand past the "
            "first)") if rewritten else ""
    return (f"Triton {_triton_version()} interpreter gap: the kernel uses Python `and` / `or` on block tensors "
            f"({where[0]}{more}), which compiled Triton makes an element-wise logical and / or and the interpreter "
            f"runs as Python{left} (`a and b` gives b), so masks built that way let the interpreted kernel read and "
            f"write past them; run compiled on a GPU to check it (or write `a & b`, which means the same in both)")


class NotRun(Exception):
    """Raised by a step for a case it ran but must not judge (an interpreter gap after the run): ``closed`` says why."""

    def __init__(self, closed: Closed):
        super().__init__(closed.text)
        self.closed = closed


def _causes(e: BaseException):
    seen = []
    while e is not None and all(e is not s for s in seen):
        seen.append(e)
        yield e
        e = e.__cause__ or e.__context__


def _globals_of(e: BaseException):
    """The module globals of every frame the exception passed through (the kernel's among them)."""
    for c in _causes(e):
        tb = c.__traceback__
        while tb is not None:
            yield tb.tb_frame.f_globals
            tb = tb.tb_next


def _uses_libdevice(e: BaseException) -> bool:
    """Whether a module the exception passed through holds a libdevice function or module (``rsqrt`` imported
    from triton.language.extra.libdevice, or the module itself)."""
    import types
    import warnings

    with warnings.catch_warnings():  # reading attributes of arbitrary globals: some warn
        warnings.simplefilter("ignore")
        for g in _globals_of(e):
            for v in list(g.values()):
                if isinstance(v, types.ModuleType):
                    mod = v.__name__
                elif isinstance(v, types.FunctionType):
                    mod = v.__module__
                else:
                    continue
                if isinstance(mod, str) and mod.startswith("triton.language.extra") and "libdevice" in mod:
                    return True
    return False


# Exceptions only the interpreter raises on a kernel compiled Triton runs: (test on the exception chain, why).
# Each is pinned by tests/test_interpreter_caveats.py: a Triton release that fixes one fails its test there.
INTERPRETER_GAPS = (
    (lambda e: any(isinstance(c, AttributeError) and str(c).startswith("'float' object has no attribute")
                   for c in _causes(e)),
     "the kernel uses a Python float argument as a Triton scalar (eps.to(...)): compiled Triton passes it as an "
     "fp32 scalar, the interpreter as a plain float, which has no such attribute"),
    (lambda e: any("NoneType" in str(c) or "cannot convert None" in str(c) for c in _causes(e)) and _uses_libdevice(e),
     "the kernel calls libdevice functions (rsqrt, ...), which the interpreter leaves unimplemented (they return "
     "None)"),
    (lambda e: any("_semantic` argument must be provided outside of JIT functions" in str(c) for c in _causes(e)),
     "the kernel calls a Triton builtin through a name the interpreter does not patch (an alias such as "
     "cast = tl.cast at module level): compiled Triton resolves it, the interpreter calls the bare function"),
    (lambda e: any(isinstance(c, NotImplementedError) and "not supported in interpreter mode" in str(c)
                   for c in _causes(e)),
     "the kernel uses inline PTX (tl.inline_asm_elementwise) or an external library call, which the interpreter "
     "cannot run"),
)


def _raised_in_triton_language(e: BaseException) -> bool:
    """Whether ``e`` was raised by triton.language itself (the innermost frame of its traceback lies there)."""
    import traceback
    from pathlib import Path

    frames = traceback.extract_tb(e.__traceback__)
    return bool(frames) and "language" in Path(frames[-1].filename).parts and "triton" in Path(frames[-1].filename).parts


def missing_triton_api(fault) -> Optional[str]:
    """A case the kernel could not run because it calls a Triton API the installed Triton does not implement
    (a NotImplementedError raised by triton.language: Triton 3.9 removed tl.make_block_ptr / tl.advance in favour
    of tensor descriptors, and FLA's norms still use them). It is not the kernel's defect and not the
    interpreter's gap (compiled Triton of that release fails the same): the case is not run, said so, on any
    device; other shapes, which may take another path of the kernel, still run."""
    original = getattr(fault, "original", fault)
    for c in _causes(original):
        if isinstance(c, NotImplementedError) and _raised_in_triton_language(c):
            return (f"the kernel calls a Triton API that the installed Triton {_triton_version()} does not provide "
                    f"(NotImplementedError: {str(c).splitlines()[0][:160]}); run it with the Triton release it was "
                    "written for, or port it to the API the message names")
    return None


def _triton_version() -> str:
    import sys

    v = getattr(sys.modules.get("triton"), "__version__", None)
    if v is None:  # not imported yet (a gate before the first run)
        from importlib import metadata

        try:
            v = metadata.version("triton")
        except metadata.PackageNotFoundError:
            v = "?"
    return v


def after_run(spec, dt, name: str, device: str, fault=None, bf16_ops=()) -> Optional[Closed]:
    """The gate after a case ran in the Triton interpreter: the kernel raised ``fault`` (a
    verifier.launch.harness.KernelFault) in a way only the interpreter does, or the interpreter did bfloat16
    arithmetic on raw bits (``bf16_ops``, from verifier.launch.interpreter.recording). None: judge the case."""
    missing = missing_triton_api(fault) if fault is not None else None
    if missing is not None:  # any device: compiled Triton of this release lacks it too
        return Closed(TRITON, missing, f"case {name} not run: {missing}")
    oom = out_of_memory(fault) if fault is not None else None
    if oom is not None:  # the machine's limit at this moment, not the kernel's refusal
        return Closed(DEVICE, oom, f"case {name} not run: {oom}")
    if not spec.interpreted(device):
        return None
    how = "run compiled on a GPU to check it"
    if fault is not None:
        original = getattr(fault, "original", fault)
        if not any(type(c).__name__ == "InterpreterError" for c in _causes(original)):
            return None  # raised outside a kernel (the launcher's own Python): not the interpreter's doing
        for applies, why in INTERPRETER_GAPS:
            if applies(original):
                reason = (f"Triton {_triton_version()} interpreter gap: {why} ({type(original).__name__}: "
                          f"{str(original).splitlines()[0][:160]}); {how}")
                return Closed(INTERPRETER, reason, f"case {name} not run: {reason}")
        return None
    gap = interpreter_source_gap(spec, device)  # a callable's library kernels are known once they ran: the run that
    if gap:  # showed them (the first) is not judged either
        return Closed(INTERPRETER, gap, f"case {name} not judged: {gap}")
    bf16_ops = sorted(op for op in bf16_ops if op not in (ROUNDED, ROUNDED_FP8, ALL_NAN_ARG))  # values replays them
    if bf16_ops:
        ops = ", ".join(bf16_ops)
        reason = (f"Triton {_triton_version()} interpreter gap: the kernel computes in bfloat16 ({ops}), which the "
                  f"interpreter does on the raw 16-bit patterns (1 + 1 gives 1.7e38), so its values say nothing "
                  f"about the kernel; {how}")
        return Closed(INTERPRETER, reason, f"case {name} not judged: {reason}")
    return None


def rounding_caveat(spec, dt, name: str, converted=(ROUNDED,)) -> Closed:
    """A case that failed in the interpreter and passed when replayed with its conversions done as compiled Triton
    does them: float32 -> bfloat16 to nearest even, float -> float8 to nearest even, saturating
    (verifier.launch.interpreter.faithful_rounding)."""
    what = []
    if ROUNDED in converted:
        what.append("rounds float32 -> bfloat16 toward zero where compiled Triton rounds to nearest even")
    if ROUNDED_FP8 in converted:
        what.append("converts to float8 wrongly (7.98 -> 4.0 in e4m3fn) where compiled Triton rounds to nearest even "
                    "and saturates")
    reason = (f"Triton {_triton_version()} interpreter gap: the interpreter {' and '.join(what)}; replayed with "
              "the compiled conversions, this case passes; run compiled on a GPU to check it")
    return Closed(INTERPRETER, reason, f"case {name} not judged: {reason}")


def all_nan_caveat(spec, dt, name: str) -> Closed:
    """A case that failed with an all-NaN slice's argmax taken as its last index and passed with its first (or the
    reverse): the finding rests on an index compiled Triton leaves to its reduction order
    (verifier.launch.interpreter, ALL_NAN_ARG)."""
    reason = (f"Triton {_triton_version()} interpreter gap: the kernel takes an argmax / argmin over a slice holding "
              "only NaN, whose index compiled Triton leaves to its reduction order, and this case fails with one "
              "choice of it and passes with another; run compiled on a GPU to check it")
    return Closed(INTERPRETER, reason, f"case {name} not judged: {reason}")


def out_of_memory(fault) -> Optional[str]:
    """Why a case is not run when torch's allocator ran out of GPU memory inside the kernel's call (a callable's
    or a launcher's intermediates past 2^31 elements; the kernels checked at once share the GPU), or None. It
    says nothing of the kernel: neither a refusal nor a crash (a fault of the GPU itself stays a crash)."""
    if getattr(fault, "cuda", False):
        return None
    for c in _causes(getattr(fault, "original", fault)):
        text = str(c)
        if type(c).__name__ == "OutOfMemoryError" or text.startswith("CUDA out of memory"):
            first = text.splitlines()[0][:200] if text else type(c).__name__
            return (f"the GPU ran out of memory for it ({first}), a large case even when run with no other "
                    "kernel's large case beside it (verifier.gpu.lease); other kernels checked at the same time may "
                    "hold some: check this kernel alone (`verifier check SPEC --kernel NAME -j 1`)")
    return None
