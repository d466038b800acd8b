"""kernel-verifier: correctness and race checking for GPU reduction kernels.

The public API (everything else is reached through its module, e.g. ``verifier.judge.compare``):
declaring kernels (``CudaKernel``, ``TritonKernel``, ``CallableKernel``, ``Launch``, ``Scalar``, ``Expectations``,
``register_resident``, ``Contracts``; ``verifier.spec.dtypes`` builds a dtype variant: ``verifier.dtypes`` is the
dtype module; a kernel refuses a shape with ``Unsupported``),
loading spec files (``load``), checking (``check_kernel``, ``check_all`` with ``Options``; results are
``KernelReport`` objects holding ``Finding`` records) and comparing one output (``assert_close``).

Attributes load on first use (module ``__getattr__``): ``import verifier`` imports nothing else, so the
command line and the pytest plugin start fast.
"""
from __future__ import annotations

import importlib

_WHERE = {
    "CudaKernel": "verifier.spec", "TritonKernel": "verifier.spec", "CallableKernel": "verifier.spec",
    "Launch": "verifier.spec", "Scalar": "verifier.spec",
    "Expectations": "verifier.spec", "register_resident": "verifier.spec", "Contracts": "verifier.declare.contracts",
    "Unsupported": "verifier.errors", "load": "verifier.declare.registry", "Options": "verifier.results.options",
    "check_kernel": "verifier.battery", "check_all": "verifier.isolation", "KernelReport": "verifier.results.kernel",
    "Finding": "verifier.results.findings", "assert_close": "verifier.judge.compare",
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
