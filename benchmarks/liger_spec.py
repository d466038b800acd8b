"""Liger-Kernel's Triton softmax as a callable spec, for `verifier bench --against benchmarks/liger_spec.py`.

Lives outside the package: liger-kernel is no dependency of kernel-verifier. It is imported on the first call;
without it installed every shape is refused with the reason, so the rest of a bench run goes on.
Declared for timing next to the bundled kernels; Liger computes in the I/O dtype's Triton arithmetic and
makes no fp32-accumulation promise, so a `verifier check` of it is a check of that claim.
"""
from verifier.spec import FLOAT_IO, CallableKernel


def _liger():
    try:
        from liger_kernel.ops.softmax import LigerSoftmaxFunction
    except ImportError:
        return None
    return LigerSoftmaxFunction


def _supports(M, N, dt):
    if _liger() is None:
        return "liger-kernel is not installed (pip install liger-kernel)"
    if N > 65536:  # its calculate_settings raises for a block past 65536 columns
        return f"N={N}: Liger's softmax takes rows of at most 65536 columns"
    return None


def _softmax(inputs, outputs, params, dt):
    import torch

    with torch.no_grad():
        return {"y": _liger().apply(inputs["x"])}


KERNELS = [
    CallableKernel(name="liger-softmax", op="softmax", fn=_softmax, device="cuda", supports=_supports,
                   dtypes=FLOAT_IO, math_mode="triton_approx",
                   description="liger_kernel.ops.softmax.LigerSoftmaxFunction (Triton)"),
]
