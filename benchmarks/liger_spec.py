"""Liger-Kernel's Triton softmax, RMSNorm and LayerNorm as callable specs, for `verifier bench --against
benchmarks/liger_spec.py` (liger-kernel 0.8.5 on the H200 runs; carried as liger_kernel-0.8.5-py3-none-any.whl,
which needs only torch and triton).

Lives outside the package: liger-kernel is no dependency of kernel-verifier. It is imported on the first call;
without it installed every shape is refused with the reason, so the rest of a bench run goes on.
Declared for timing next to the bundled kernels, called as a model calls them (``Function.apply``, Liger's own
defaults: RMSNorm in its 'llama' casting mode); Liger computes in the I/O dtype's Triton arithmetic and makes no
fp32-accumulation promise, so a `verifier check` of them is a check of that claim. Their Python launch is longer
than their kernel at small rows: `verifier bench` says host-bound there (verifier/bench/clock.py).
"""
from verifier.spec import FLOAT_IO, CallableKernel

_MODULES = {"softmax": ("liger_kernel.ops.softmax", "LigerSoftmaxFunction"),
            "rmsnorm": ("liger_kernel.ops.rms_norm", "LigerRMSNormFunction"),
            "layernorm": ("liger_kernel.ops.layer_norm", "LigerLayerNormFunction")}


def _liger(op):
    import importlib

    module, name = _MODULES[op]
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        return None


def _supports(op):
    def supports(M, N, dt):
        if _liger(op) is None:
            return "liger-kernel is not installed (pip install liger-kernel)"
        if N > 65536:  # its calculate_settings raises for a block past 65536 columns
            return f"N={N}: Liger's {op} takes rows of at most 65536 columns"
        return None

    return supports


def _softmax(inputs, outputs, params, dt):
    import torch

    with torch.no_grad():
        return {"y": _liger("softmax").apply(inputs["x"])}


def _rmsnorm(inputs, outputs, params, dt):
    import torch

    with torch.no_grad():
        return {"y": _liger("rmsnorm").apply(inputs["x"], inputs["w"], params["eps"])}


def _layernorm(inputs, outputs, params, dt):
    import torch

    with torch.no_grad():
        return {"y": _liger("layernorm").apply(inputs["x"], inputs["w"], inputs["b"], params["eps"])}


KERNELS = [
    CallableKernel(name=f"liger-{op}", op=op, fn=fn, device="cuda", supports=_supports(op), dtypes=FLOAT_IO,
                   math_mode="triton_approx", description=f"liger_kernel {'.'.join(_MODULES[op])} (Triton)")
    for op, fn in (("softmax", _softmax), ("rmsnorm", _rmsnorm), ("layernorm", _layernorm))
]
