"""Runner for TritonKernel: imports the kernel module by file path, in compiled or interpreter mode.

``@triton.jit`` decides at decoration time whether a function is compiled or interpreted
(triton >= 3.3 reads ``knobs.runtime.interpret``, i.e. TRITON_INTERPRET unless set in code).
Triton's own library (tl.sum, tl.max, ...) is decorated when ``triton`` is imported, and the
interpreter reads the variable again while a kernel runs, so the mode is fixed once per process,
before anything imports triton:

- 'compiled' on a CUDA GPU, 'interpreter' otherwise; VERIFIER_TRITON_MODE or the caller's
  ``mode=`` forces one, and TRITON_INTERPRET=1 in the environment asks for the interpreter;
- :func:`activate` sets TRITON_INTERPRET to match, leaves it set and imports triton; if triton
  was already imported in the other mode it refuses with a fix (it cannot be re-imported), and
  a later request for the other mode in the same process is refused too;
- every kernel module is imported fresh under a name unique to its path and mode, and every
  jit function it reaches is checked to be of the mode's class, so a helper module decorated
  earlier in the other mode is reported instead of failing obscurely inside Triton.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path

import numpy as np

from verifier.declare.out_layouts import empty_like_declared
from verifier.declare.siblings import importable
from verifier.dtypes import from_numpy
from verifier.errors import SpecError, ToolMissing, Unsupported, UsageError
from verifier.gpu import probe
from verifier.inputs.catalogue import maker, rand_normal
from verifier.ops import OPS

MODES = ("compiled", "interpreter")
MODE_ENV = "VERIFIER_TRITON_MODE"

_active: str | None = None  # the mode this process committed to
_modules: dict = {}  # (path, mtime, mode) -> module


def triton_mode(requested: str | None = None) -> str:
    """The mode the runner uses: ``requested``, else the one already committed, else
    VERIFIER_TRITON_MODE, else 'interpreter' if TRITON_INTERPRET=1, else 'compiled' on a CUDA GPU
    and 'interpreter' without one. Raises UsageError on an unknown mode or a switch of mode."""
    source = "mode="
    if requested is None and _active is None:
        requested, source = os.environ.get(MODE_ENV) or None, MODE_ENV
    if requested is not None and requested not in MODES:
        raise UsageError(f"unknown Triton mode {requested!r} (from {source})", fix=f"use one of {', '.join(MODES)}")
    if _active is not None:
        if requested not in (None, _active):
            raise UsageError(
                f"Triton is already set up in {_active} mode in this process; {requested} mode was asked for",
                fix="run compiled and interpreted checks in separate processes "
                f"(e.g. {MODE_ENV}={requested} in a fresh pytest run)",
            )
        return _active
    if requested is not None:
        return requested
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "interpreter"
    return "compiled" if probe.cuda_available() else "interpreter"


def _effective_interpret() -> bool:
    """What ``@triton.jit`` would decide right now."""
    import triton

    knobs = getattr(triton, "knobs", None)
    if knobs is not None:  # triton >= 3.3: an explicit knobs.runtime.interpret overrides the env
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def interpreter_if_installed() -> None:
    """On the CPU, before code that may launch Triton kernels it does not declare (a callable over a library's
    kernels): commit to the interpreter when triton is installed and not already imported compiled (then the
    callable's launches fail as they would, "0 active drivers": nothing here hides it)."""
    if _active is not None or importlib.util.find_spec("triton") is None or _imported_mode() == "compiled":
        return
    activate("interpreter")


def prefer_interpreter() -> None:
    """Before loading spec files on the CPU: a spec file importing a library that decorates Triton kernels at import
    (``from liger_kernel.ops.rms_norm import LigerRMSNormFunction``) gets them interpreted, the only way they run
    here. Sets TRITON_INTERPRET only (imports nothing), and only when triton is not imported yet and no mode was
    asked for (VERIFIER_TRITON_MODE, TRITON_INTERPRET)."""
    if "triton" in sys.modules or os.environ.get(MODE_ENV) or os.environ.get("TRITON_INTERPRET") is not None:
        return
    os.environ["TRITON_INTERPRET"] = "1"


def interpreter_active() -> bool:
    """Whether triton is imported in this process in interpreter mode (reads sys.modules; imports nothing)."""
    return "triton.language.standard" in sys.modules and _imported_mode() == "interpreter"


def _imported_mode() -> str | None:
    """The mode triton's own library was decorated in, or None if triton.language is not imported."""
    std = sys.modules.get("triton.language.standard")
    return _jit_mode(getattr(std, "sum", None)) if std is not None else None


def activate(mode: str | None = None) -> str:
    """Commit this process to ``mode`` (default: :func:`triton_mode`) and import triton in it.
    Call it before anything else imports triton (a conftest or pytest plugin can, at configure time)."""
    global _active
    mode = triton_mode(mode)
    if mode == _active:
        return mode
    if mode == "compiled" and not probe.cuda_available():
        raise ToolMissing(
            "compiled Triton mode needs a CUDA GPU and torch sees none",
            fix=f"run on a GPU machine, or use the interpreter: {MODE_ENV}=interpreter",
        )
    imported = _imported_mode()
    if imported not in (None, mode):
        env = "TRITON_INTERPRET=1" if imported == "interpreter" else "TRITON_INTERPRET unset"
        raise UsageError(
            f"asked for Triton {mode} mode, but triton was already imported in {imported} mode ({env} at "
            f"its import), so its own tl.sum/tl.max are {imported}-only and it cannot be re-imported",
            fix=f"set {MODE_ENV}={mode} (or TRITON_INTERPRET={'1' if mode == 'interpreter' else '0'}) before "
            "the process starts, or call verifier.launch.triton.activate() before anything imports triton",
        )
    # Before triton and any kernel module are imported: jit decorators read it.
    os.environ["TRITON_INTERPRET"] = "1" if mode == "interpreter" else "0"
    if _effective_interpret() != (mode == "interpreter"):
        raise UsageError(
            f"asked for Triton {mode} mode, but triton.knobs.runtime.interpret was set in code to "
            f"{mode != 'interpreter'}, which overrides TRITON_INTERPRET",
            fix="do not set triton.knobs.runtime.interpret before using the verifier "
            f"(or `del triton.knobs.runtime.interpret`), or ask for the matching mode with {MODE_ENV}",
        )
    _active = mode
    if mode == "interpreter":  # before any kernel of this process runs, through the runner or called directly
        import triton.runtime.interpreter as interp

        from verifier.launch.interpreter import dtype_value, range_hints, scalar_index
        from verifier.launch.triton_boolops import compiled_boolops

        scalar_index(interp)
        range_hints(interp)
        dtype_value(interp)
        compiled_boolops(interp)
    return mode


def _jit_mode(obj) -> str | None:
    """'compiled' / 'interpreter' for a jit function, None for anything else (imports triton)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if isinstance(obj, InterpretedFunction):
        return "interpreter"
    if isinstance(obj, JITFunction):
        return "compiled"
    return None


def _check_decorations(mod, path: Path, mode: str) -> None:
    wrong = [(n, getattr(getattr(o, "fn", None), "__module__", "?"))
             for n, o in vars(mod).items() if _jit_mode(o) not in (None, mode)]
    if wrong:
        other = MODES[1 - MODES.index(mode)]
        listed = ", ".join(f"{n} (from module {m})" for n, m in wrong)
        raise UsageError(
            f"kernel module {path}: jit function(s) {listed} were decorated for {other} mode, but the runner "
            f"is in {mode} mode: their module was imported before the runner set TRITON_INTERPRET",
            fix="do not import Triton kernel modules (or their @triton.jit helpers) from the spec file: the runner "
            f"loads the kernel module, which may import helpers beside it, once it has chosen the mode; or pick "
            f"the mode up front with {MODE_ENV}",
        )


def load_module(spec, mode: str | None = None):
    """Import ``spec.module_path()`` in the runner's mode (cached per file version and mode)."""
    mode = activate(mode)
    path = spec.module_path().resolve()
    if not path.is_file():
        raise SpecError(f"kernel {spec.name}: Triton module {path} does not exist",
                         fix="set module= to the kernel file, relative to the spec file")
    key = (str(path), path.stat().st_mtime_ns, mode)
    if key in _modules:
        return _modules[key]
    name = f"verifier_triton_{mode}_{hashlib.sha1(repr(key).encode()).hexdigest()[:12]}"
    imp = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(imp)
    sys.modules[name] = mod  # triton reads source and globals through the module
    try:
        with importable(path):  # `import my_helpers` finds my_helpers.py beside the kernel module
            imp.loader.exec_module(mod)
    except Exception as e:
        del sys.modules[name]
        here = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == path]
        loc = f"{path}:{here[-1].lineno}" if here else str(path)
        raise SpecError(f"kernel {spec.name}: {loc} failed to import: {type(e).__name__}: {e}",
                         fix=f"fix the kernel module (python {path} shows the traceback)") from None
    _check_decorations(mod, path, mode)
    if mode == "interpreter":  # `triton_cast = tl.cast` reaches the interpreter's builtin, as compiled Triton's
        from verifier.launch.interpreter import resolve_builtin_aliases

        resolve_builtin_aliases(mod)  # (libdevice functions: verifier.launch.libdevice, around each launch)
    if not callable(getattr(mod, spec.launcher, None)):
        raise SpecError(f"kernel {spec.name}: {path} has no function {spec.launcher!r}",
                         fix="define launcher(inputs, outputs, params, dtypes) there, or fix launcher=")
    _modules[key] = mod
    return mod


def _check_tensors(spec, inputs, outputs, dt, device, mode, params):
    import torch

    op = OPS[spec.op]
    missing = [n for n in op.inputs if n not in inputs] + [n for n in op.outputs if n not in outputs]
    if missing:
        raise UsageError(f"kernel {spec.name}: tensors {missing} not given",
                         fix=f"op {spec.op} reads {list(op.inputs)} and writes {list(op.outputs)}")
    M, N = inputs["x"].shape
    want_dev = torch.device(device)
    if mode == "compiled" and want_dev.type != "cuda":
        raise UsageError(f"kernel {spec.name}: compiled Triton runs on CUDA tensors, device is {device}",
                         fix="pass device='cuda' (or use the interpreter on CPU)")
    for role, group in (("input", inputs), ("output", outputs)):
        # an in-out tensor is checked once, as an input (it keeps the input dtype)
        for n in (op.inputs if role == "input" else [o for o in op.outputs if o not in op.inouts]):
            t = group[n]
            want = op.input_dtype(n, dt, params) if role == "input" else op.output_dtype(n, dt, params)  # labels: their own
            shape = op.shape_of(n, M, N, params)
            problems = []
            if tuple(t.shape) != shape:
                problems.append(f"shape {tuple(t.shape)}, expected {shape}")
            if t.dtype != getattr(torch, want):
                problems.append(f"dtype {t.dtype}, declared {want}")
            if t.device.type != want_dev.type:
                problems.append(f"device {t.device}, expected {device}")
            if t.stride(-1) != 1 and not (role == "output" and n in spec.output_layout):  # its own (ColumnMajor)
                problems.append("non-unit stride along the row")
            if problems:
                raise UsageError(f"kernel {spec.name}: {role} {n!r} has " + "; ".join(problems),
                                 fix="allocate tensors with the op's shapes and the kernel's declared dtypes")
    for n in op.inouts:
        if outputs[n] is not inputs[n]:
            raise UsageError(f"kernel {spec.name}: {n!r} is updated in place",
                             fix=f"pass the same tensor object as inputs[{n!r}] and outputs[{n!r}]")
    return M, N


def _launch(spec, inputs, outputs, params, dt, device, mode, capture: bool = False) -> list:
    """Launch; with ``capture``, return the compiled kernels the launcher launched (verifier.launch.triton_capture:
    found through Triton's launch hook and JIT, whatever the launcher returns), else []."""
    mode = triton_mode(mode)
    # Refuse before anything else: an unsupported shape (M = 0 included) is not a tensor error.
    M, N = inputs["x"].shape[0], inputs["x"].shape[-1]
    reason = spec.check_supported(M, N, dt)
    if reason:
        raise Unsupported(f"{spec.name} refuses M={M}, N={N}, {dt.tag}: {reason}")
    params = {**spec.op_params(), **(params or {})}
    _check_tensors(spec, inputs, outputs, dt, device, mode, params)
    mod = load_module(spec, mode)
    launcher = getattr(mod, spec.launcher)
    from verifier.launch.triton_capture import interpreted, launches
    from verifier.ops.other_names import named_too

    inputs, outputs = named_too(spec, inputs), named_too(spec, outputs)  # the op's other names for its tensors

    if mode == "interpreter":
        from verifier.launch.interpreter import watch

        with np.errstate(all="ignore"), watch(), interpreted() as launched:  # numpy computes; inf/NaN expected
            launcher(inputs, outputs, params, dt)
        _launched_some(spec, launched, M, N, dt)
        return []
    import torch

    with launches(resolve=capture) as launched:
        returned = launcher(inputs, outputs, params, dt)
        torch.cuda.synchronize()  # surface launch errors here, not at the next unrelated call
    _launched_some(spec, launched, M, N, dt)
    if not capture:
        return []
    returned = list(returned) if isinstance(returned, (list, tuple)) else [returned]
    kernels = [h for h in returned if hasattr(h, "n_regs")]  # an older launcher's kernel[grid](...) results
    return kernels + [k for k in launched if not any(k is h for h in kernels)]


def _launched_some(spec, launched, M: int, N: int, dt) -> None:
    """A launcher that launched no Triton kernel computed its outputs another way (torch, say): nothing Triton
    was checked, so it is the kernel's error (a SpecError: verdict 'error', exit 1), not a pass."""
    if not launched.seen:
        raise SpecError(f"kernel {spec.name}: launcher {spec.launcher}() launched no Triton kernel for M={M}, N={N}, "
                        f"{dt.tag}: its outputs came from somewhere else (torch?), so no Triton code was checked",
                        fix="launch the Triton kernel (directly or through its library's function) from the launcher; "
                            "a kernel computed with torch is a CallableKernel")


def run_triton(spec, inputs, outputs, params, dtypes, device, mode: str | None = None) -> None:
    """Launch ``spec`` on torch tensors: ``inputs``/``outputs`` by op tensor name, outputs
    preallocated, in-out tensors the same object in both. Raises Unsupported (before launching)
    when the kernel refuses the shape or dtype."""
    _launch(spec, inputs, outputs, params, dtypes, device, mode)


def compiled_resources(spec, M: int, N: int, dtypes, params=None, device: str = "cuda") -> dict:
    """Registers, local memory and shared memory of the compiled kernel(s) for one (M, N, dtypes).

    Launches once on random data (Triton compiles per specialization) and takes the kernels launched from
    Triton itself, so a launcher may return anything (a library wrapper returns its outputs). ``local_bytes``
    is CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (Triton's ``n_spills`` * 4): spills plus stack frame. Returns the
    per-kernel list under 'kernels' and the maxima at the top level. An exception the launcher raises is a
    verifier.launch.harness.KernelFault (the battery decides: a compiler limit is a refusal)."""
    if not probe.cuda_available():
        raise ToolMissing("no GPU: resources of compiled Triton kernels need one",
                          fix="run on a machine with a CUDA GPU (the interpreter has no registers to count)")
    import torch

    from verifier.errors import VerifierError
    from verifier.launch.harness import KernelFault

    if triton_mode() != "compiled":
        raise UsageError("compiled_resources needs compiled Triton, but this process is in interpreter mode",
                         fix=f"unset TRITON_INTERPRET / set {MODE_ENV}=compiled in a fresh process")
    op = OPS[spec.op]
    params = {**spec.op_params(), **(params or {})}
    drawn = maker(M, N, rand_normal)(np.random.default_rng(0), dtypes, spec.op, params)
    inputs = {n: from_numpy(a, device) for n, a in drawn.items()}  # every role in its dtype (labels too)
    held = {n: n if n in op.inouts else spec.outputs_alias.get(n) for n in op.outputs}  # updated in place
    def fresh(n):  # at the output's declared layout, if any (verifier.declare.out_layouts)
        shape, dtype = op.shape_of(n, M, N, params), getattr(torch, op.output_dtype(n, dtypes, params))
        t = empty_like_declared(spec, n, shape, dtype, device, M, N, params)
        return torch.empty(shape, device=device, dtype=dtype) if t is None else t

    outputs = {n: inputs[held[n]] if held[n] else fresh(n) for n in op.outputs}
    try:
        handles = _launch(spec, inputs, outputs, params, dtypes, device, "compiled", capture=True)
    except VerifierError:
        raise
    except Exception as e:
        raise KernelFault(e) from e
    kernels = [{
        "name": h.name,
        "registers": int(h.n_regs),
        "local_bytes": int(h.n_spills) * 4,
        "shared_bytes": int(h.metadata.shared),
        "num_warps": int(h.metadata.num_warps),
    } for h in handles]
    if not kernels:
        raise SpecError(f"kernel {spec.name}: launcher {spec.launcher}() launched no Triton kernel for M={M}, N={N}, "
                        f"{dtypes.tag}", fix="launch the Triton kernel (directly or through its library's function) "
                        "from the launcher")
    top = {k: max(d[k] for d in kernels) for k in ("registers", "local_bytes", "shared_bytes")}
    return {**top, "kernels": kernels}


def bench_call(spec, inputs, outputs, params, dt):
    """verifier bench's call: the launcher, compiled, after one checked run."""
    run_triton(spec, inputs, outputs, params, dt, "cuda", mode="compiled")
    from verifier.ops.other_names import named_too

    fn = getattr(load_module(spec, "compiled"), spec.launcher)
    inputs, outputs = named_too(spec, inputs), named_too(spec, outputs)
    return lambda: fn(inputs, outputs, params, dt)


def autotune_variants(spec) -> list:
    """[(config index, label)] of an autotuned kernel's configs (verifier.launch.triton_configs), in this process's
    Triton mode: those of its module's autotuners and of any met while it ran pinned; [(0, "")] with none or one
    config (still pinned: an autotuner of another module, met in that run, counts from then on)."""
    from verifier.launch import triton_configs

    mod, where = _tuned_scope(spec)
    n = triton_configs.config_count(mod, where)
    return [(0, "")] if n < 2 else [(i, triton_configs.label(mod, i, where)) for i in range(n)]


def autotune_calls(spec) -> dict:
    """{id: (name, pinned calls so far)} of the autotuners met while the kernel ran (triton_configs.calls_met)."""
    from verifier.launch import triton_configs

    return triton_configs.calls_met(*_tuned_scope(spec))


def interpreted_values_key(spec, index):
    """In the interpreter, what config ``index`` computes with (triton_configs.values_key): two configs with the
    same key differ only in compile options the interpreter ignores, so they give the same values there. None in
    compiled Triton (num_warps changes a reduction's order and its races) or where the key cannot be told."""
    if index is None or triton_mode() != "interpreter":
        return None
    from verifier.launch import triton_configs

    mod, where = _tuned_scope(spec)
    return triton_configs.values_key(mod, index, where)


def _tuned_scope(spec) -> tuple:
    """(module, launcher) the autotuners of a spec are found and remembered under: a TritonKernel's module and
    launcher; for a callable launching Triton kernels of its own (a library's), no module, its name."""
    if spec.uses_triton:
        return load_module(spec), spec.launcher
    return None, f"{spec.origin}:{spec.name}"


@contextlib.contextmanager
def autotune_pinned(spec, index):
    """The kernel's autotuners pinned to config ``index`` while the block runs (None: as they are)."""
    if index is None:
        yield
        return
    from verifier.launch import triton_configs

    mod, where = _tuned_scope(spec)
    with triton_configs.pinned(mod, index, where):
        yield
