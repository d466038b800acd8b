"""Runners: how a kernel is launched (cuda, triton, callable).

``runner_for(spec)`` imports the launcher its kind names (``KernelSpec.runner``); ``runnable_reason(spec, device)`` says why its
launches cannot run on a device. The runner modules are imported on first use: importing torch or triton
costs seconds, and importing triton fixes its compiled/interpreted mode (verifier.launch.triton).
"""
from __future__ import annotations

from typing import Callable, Optional


def runner_for(spec) -> Callable:
    """The launcher ``run(spec, inputs, outputs, params, dtypes, device)`` its kind names (``KernelSpec.runner``)."""
    import importlib

    module, _, name = spec.runner.partition(":")
    return getattr(importlib.import_module(module), name)


def bench_call_for(spec) -> Callable:
    """``bench_call(spec, inputs, outputs, params, dt) -> call()`` of the spec's runner module: one launch made (and
    checked) at once, then a no-argument function that launches again without synchronizing (verifier bench)."""
    import importlib

    return getattr(importlib.import_module(spec.runner.partition(":")[0]), "bench_call")


def runnable_reason(spec, device: str) -> Optional[str]:
    """Why this kernel's launches cannot run on ``device`` (None if they can)."""
    missing = spec.unavailable() if hasattr(spec, "unavailable") else None
    if missing:  # another project's package it needs is not installed (verifier.declare.packages)
        return missing
    return spec.device_reason(device)


RETIRED_ENV = "VERIFIER_CUDA_LAUNCH"  # chose between two CUDA launch paths; there is one now (verifier.launch.cuda)


def warn_retired_env(env=None, stream=None) -> bool:
    """One line on stderr when $VERIFIER_CUDA_LAUNCH is set: it no longer has an effect. The CLI and the pytest
    plugin's session call it once (their child processes do not). Returns whether it warned."""
    import os
    import sys

    value = (os.environ if env is None else env).get(RETIRED_ENV)
    if value is None:
        return False
    (stream or sys.stderr).write(f"verifier: warning: {RETIRED_ENV}={value!r} no longer has an effect: CUDA kernels "
                                 f"have one launch path (the CUDA driver API); unset it\n")
    return True
