"""The compiled Triton kernels a launcher launched, found without the launcher's help.

A kernel behind a library's Python function (Liger's ``rms_norm_forward``, say) is launched by that function,
which returns its outputs, not the compiled kernel whose registers, local and shared memory the resources step
reads. Two of Triton's own paths see every launch (triton 3.4 to 3.9 alike):

- ``JITFunction.run`` returns the ``CompiledKernel`` it launched (``kernel[grid](...)``, autotuners and heuristics
  all end there), so it is wrapped for the duration of the call;
- ``knobs.runtime.launch_enter_hook`` (a hook chain) is called with every launch's metadata, including launches
  of an already compiled kernel that bypass the JIT (``compiled[grid](...)``); such a kernel is looked up among
  the live ``CompiledKernel`` objects by its CUDA function handle.
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


@contextlib.contextmanager
def launches(enabled: bool = True):
    """Yields a list that holds, after the block, the compiled kernels launched inside it (launch order, each
    once). Does nothing when not ``enabled``."""
    found: list = []
    if not enabled:
        yield found
        return
    from triton import knobs
    from triton.runtime.jit import JITFunction

    run, handles = JITFunction.run, []

    def recording_run(self, *args, **kwargs):
        kernel = run(self, *args, **kwargs)
        if kernel is not None and not kwargs.get("warmup", False) and not any(kernel is k for k in found):
            found.append(kernel)
        return kernel

    def hook(metadata):
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
    if missing:
        found += _compiled_with(missing)


def _compiled_with(handles: list) -> list:
    """The live CompiledKernel objects whose CUDA function is one of ``handles`` (launched without the JIT)."""
    from triton.compiler.compiler import CompiledKernel

    by_fn = {}
    for obj in gc.get_objects():  # type(), not isinstance(): some objects warn when their __class__ is read
        if issubclass(type(obj), CompiledKernel) and getattr(obj, "function", None) in handles:
            by_fn.setdefault(obj.function, obj)
    return [by_fn[h] for h in handles if h in by_fn]
