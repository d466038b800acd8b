"""Which way CUDA kernel specs are launched on a GPU: through the CUDA driver API on numpy buffers
(verifier.gpu.libcuda, no torch and no CuPy in the process) or through CuPy on torch tensors.

Both paths give the battery the same guarded, poisoned output buffers and read back the same bits
(verifier.launch.harness); tests/test_launch_path_gpu.py checks on a GPU that outputs and findings are identical.
The driver path saves the 4-5 s that ``import torch`` costs a process on an H200 machine.

- ``VERIFIER_CUDA_LAUNCH=torch``: always torch + CuPy (to compare, or if the driver path misbehaves).
- ``VERIFIER_CUDA_LAUNCH=driver``: the driver path wherever verifier.launch.harness runs a CUDA spec on a GPU.
- unset or ``auto``: the driver path in the check child (``verifier check`` on a GPU, every budget; it calls
  ``prefer_driver()``), torch elsewhere (the pytest plugin and the sanitizer's child, which use torch anyway).
Triton kernels and callables always run on torch tensors. No CUDA spec needs a fallback to torch: every field of
``Launch`` (entry, grid, block, dynamic shared memory, compile-time clusters) and every argument form (tensor
names, 'M', 'N', 'eps', 'tmp:' workspaces, Scalars) is bound by one function for both paths
(verifier.launch.cuda.bind_args).
"""
from __future__ import annotations

import os

from verifier.errors import UsageError

ENV = "VERIFIER_CUDA_LAUNCH"
CHOICES = ("auto", "driver", "torch")
_preferred = {"auto": "torch"}  # what 'auto' means in this process


def prefer_driver() -> None:
    """Make 'auto' mean the driver path in this process (the check child calls it at start)."""
    _preferred["auto"] = "driver"


def mode() -> str:
    """'driver' or 'torch' for this process; a bad $VERIFIER_CUDA_LAUNCH is a UsageError naming it."""
    raw = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if raw not in CHOICES:
        raise UsageError(f"{ENV}={os.environ.get(ENV)!r} is not one of {', '.join(CHOICES)}",
                         fix=f"set {ENV}=torch to launch CUDA kernels through torch + CuPy, {ENV}=driver for the "
                             "CUDA driver API on numpy buffers, or unset it (auto)")
    return _preferred["auto"] if raw == "auto" else raw


def driver_for(spec, device: str) -> bool:
    """Whether ``spec`` runs through the driver path on ``device``: CUDA specs on a GPU in driver mode."""
    return device == "cuda" and getattr(spec, "kind", None) == "cuda" and mode() == "driver"
