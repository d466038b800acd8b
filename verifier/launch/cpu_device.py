"""A library's ``torch.cuda.device(...)`` context on a machine where torch has no CUDA device (the Triton interpreter
runs on CPU tensors): it selects nothing, as there is nothing to select (verifier.launch.interpreter.watch enters it
around every interpreted launch)."""
from __future__ import annotations

import contextlib


class _NoDevice:
    """torch.cuda.device(...) where torch sees no CUDA device: there is none to select, the tensors are on the
    CPU. Without it ``with torch.cuda.device(a.device.index):`` (FBGEMM's quantizers) raises on a CPU tensor
    (index None: TypeError; a CPU device: ValueError; an int: 'compiled without CUDA support')."""

    def __init__(self, device=None):
        self.idx = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@contextlib.contextmanager
def no_cuda_device():
    """Inside, where torch has no CUDA device, ``torch.cuda.device`` is a context selecting nothing (_NoDevice)."""
    import torch

    if torch.cuda.is_available():
        yield
        return
    saved = torch.cuda.device
    torch.cuda.device = _NoDevice
    try:
        yield
    finally:
        torch.cuda.device = saved
