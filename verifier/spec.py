"""Everything a spec file needs, in one import: ``from verifier.spec import CudaKernel, Launch, dtypes, ...``.

The public surface of the declare stage (verifier/declare/): the kernel constructors, their launches and
arguments, expectations, contracts, dtypes, and the exceptions a spec raises (``Unsupported`` to refuse a
shape, ``SpecError`` for a malformed declaration). docs/specs.md documents every field. Spec files import
nothing else of verifier: the modules behind these names are internal and may move.
"""
from __future__ import annotations

from verifier.declare.contracts import Contracts
from verifier.declare.kernels import (CallableKernel, CudaKernel, Dtypes, Expectations, KernelSpec, Launch,
                                      MATH_MODES, Scalar, TritonKernel, Workspace, dtypes,
                                      register_resident)
from verifier.errors import SpecError, Unsupported, UsageError

__all__ = ["CallableKernel", "Contracts", "CudaKernel", "Dtypes", "Expectations", "KernelSpec", "Launch",
           "MATH_MODES", "Scalar", "SpecError", "TritonKernel", "Unsupported", "UsageError", "Workspace", "dtypes",
           "register_resident"]
