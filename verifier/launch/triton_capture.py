"""The compiled Triton kernels a launcher launched, found without the launcher's help.

A kernel behind a library's Python function (Liger's ``rms_norm_forward``, say) is launched by that function,
which returns its outputs, not the compiled kernel whose registers, local and shared memory the resources step
reads. Two of Triton's own paths see every launch (triton 3.4 to 3.9 alike):

- ``JITFunction.run`` returns the ``CompiledKernel`` it launched (``kernel[grid](...)``, autotuners and heuristics
  all end there), so it is wrapped for the duration of the call;
- ``knobs.runtime.launch_enter_hook`` (a hook chain) is called with every launch's metadata, including launches
  of an already compiled kernel that bypass the JIT (``compiled[grid](...)``); such a kernel is looked up among
  the live ``CompiledKernel`` objects by its CUDA function handle.

In the interpreter (CPU) every launch ends in ``InterpretedFunction.run`` (``interpreted``). Either way a launcher
that launched nothing computed its outputs some other way (torch): verifier.launch.triton makes that the
kernel's error.
"""
from __future__ import annotations

import contextlib
import gc


def _function_of(metadata):
    data = getattr(metadata, "data", metadata)  # a LazyDict, or a plain dict in older releases
    try:
        return data["function"]
    except (KeyError, TypeError):
        return None


class Launched(list):
    """The compiled kernels launched (``launches``), and ``seen``: how many launches Triton saw at all;
    ``functions``: (source file, name) of the ``@triton.jit`` functions the interpreter ran (``interpreted``)."""

    seen = 0

    def __init__(self):
        super().__init__()
        self.functions = set()


@contextlib.contextmanager
def interpreted():
    """Yields a Launched whose ``seen`` counts, after the block, the Triton kernels the interpreter ran inside it
    (every ``kernel[grid](...)``, autotuned or not, ends in ``InterpretedFunction.run``)."""
    from triton.runtime.interpreter import InterpretedFunction

    found, run = Launched(), InterpretedFunction.run

    def counting_run(self, *args, **kwargs):
        if not kwargs.get("warmup", False):
            found.seen += 1
            fn = getattr(self, "fn", None)
            code = getattr(fn, "__code__", None)
            if code is not None:
                found.functions.add((code.co_filename, fn.__name__))
        return run(self, *args, **kwargs)

    InterpretedFunction.run = counting_run
    try:
        yield found
    finally:
        InterpretedFunction.run = run


@contextlib.contextmanager
def launches(resolve: bool = True):
    """Yields a Launched: after the block, how many launches Triton saw inside it (``seen``: a launcher that
    launched none computed without Triton) and, with ``resolve``, the compiled kernels launched (launch order,
    each once)."""
    found = Launched()
    from triton import knobs
    from triton.runtime.jit import JITFunction

    run, handles = JITFunction.run, []

    def recording_run(self, *args, **kwargs):
        kernel = run(self, *args, **kwargs)
        if not kwargs.get("warmup", False):
            found.seen += 1
            if kernel is not None and resolve and not any(kernel is k for k in found):
                found.append(kernel)
        return kernel

    def hook(metadata):
        found.seen += 1
        handles.append(_function_of(metadata))

    chain = getattr(knobs.runtime, "launch_enter_hook", None)
    hooked = hasattr(chain, "add") and hasattr(chain, "remove")
    JITFunction.run = recording_run
    if hooked:
        chain.add(hook)
    try:
        yield found
    finally:
        JITFunction.run = run
        if hooked:
            chain.remove(hook)
    known = {getattr(k, "function", None) for k in found}
    missing = [h for h in dict.fromkeys(handles) if h is not None and h not in known]
    if missing and resolve:
        found += _compiled_with(missing)


def _compiled_with(handles: list) -> list:
    """The live CompiledKernel objects whose CUDA function is one of ``handles`` (launched without the JIT)."""
    from triton.compiler.compiler import CompiledKernel

    by_fn = {}
    for obj in gc.get_objects():  # type(), not isinstance(): some objects warn when their __class__ is read
        if issubclass(type(obj), CompiledKernel) and getattr(obj, "function", None) in handles:
            by_fn.setdefault(obj.function, obj)
    return [by_fn[h] for h in handles if h in by_fn]
