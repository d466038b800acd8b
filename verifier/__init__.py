"""kernel-verifier: correctness and race checking for GPU reduction kernels.

The public API. Declaring kernels: ``verifier.spec`` (``CudaKernel``, ``TritonKernel``, ``CallableKernel``,
``Launch``, ``Scalar``, ``Workspace``, ``Expectations``, ``Contracts``, ``dtypes``, ...; docs/specs.md), also re-exported
here for the kernel kinds. Loading spec files: ``load``. Checking: ``check_kernel`` / ``check_all`` with
``Options``; results are ``KernelReport`` objects holding ``Finding`` records. Judging one output yourself:
``check_output`` (reference + per-element budget + comparison), ``compare`` / ``assert_close`` against a
reference you computed, ``ulp_distance``; the adversarial inputs: ``catalogue``.

Everything else (verifier/<stage>/...) is internal and may move. Attributes load on first use (module
``__getattr__``): ``import verifier`` imports nothing else, so the command line and the pytest plugin start fast.
"""
from __future__ import annotations

import importlib

_WHERE = {
    "CudaKernel": "verifier.spec", "TritonKernel": "verifier.spec", "CallableKernel": "verifier.spec",
    "Launch": "verifier.spec", "Scalar": "verifier.spec", "Contracts": "verifier.spec",
    "Expectations": "verifier.spec", "register_resident": "verifier.spec", "Unsupported": "verifier.spec",
    "load": "verifier.declare.registry", "Options": "verifier.results.options",
    "check_kernel": "verifier.battery", "check_all": "verifier.isolation", "KernelReport": "verifier.results.kernel",
    "Finding": "verifier.results.findings", "assert_close": "verifier.judge.compare", "compare": "verifier.judge.compare",
    "check_output": "verifier.judge", "ulp_distance": "verifier.numerics.ulp", "catalogue": "verifier.inputs.catalogue",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'verifier' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
