"""Runners: the one place that knows how a kernel is launched (cuda, triton, callable).

``runner_for(spec)`` picks the launcher of a spec's kind; ``runnable_reason(spec, device)`` says why its
launches cannot run on a device. The runner modules are imported on first use: importing torch or triton
costs seconds, and importing triton fixes its compiled/interpreted mode (verifier.launch.triton).
"""
from __future__ import annotations

from typing import Callable, Optional


def runner_for(spec) -> Callable:
    """The launcher ``run(spec, inputs, outputs, params, dtypes, device)`` of the spec's kind."""
    if spec.kind == "cuda":
        from verifier.launch.cuda import run_cuda

        return run_cuda
    if spec.kind == "triton":
        from verifier.launch.triton import run_triton

        return run_triton
    from verifier.launch.callable import run_callable

    return run_callable


def runnable_reason(spec, device: str) -> Optional[str]:
    """Why this kernel's launches cannot run on ``device`` (None if they can)."""
    missing = spec.unavailable() if hasattr(spec, "unavailable") else None
    if missing:  # another project's package it needs is not installed (verifier.declare.packages)
        return missing
    if spec.kind == "cuda" and device != "cuda":
        return "no CUDA GPU: CUDA kernels are built and resource-checked only"
    if spec.kind == "callable" and spec.device not in ("any", device):
        return f"callable declared for {spec.device}, device is {device}"
    if spec.kind == "triton":
        import importlib.util

        # find_spec, not import: importing triton fixes compiled vs interpreted mode for the process.
        if importlib.util.find_spec("triton") is None:
            return "triton is not installed (pip install 'kernel-verifier[triton]')"
    return None


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
