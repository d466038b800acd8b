"""Everything a spec file needs, in one import: ``from verifier.spec import CudaKernel, Launch, dtypes, ...``.

The public surface of the declare stage (verifier/declare/): the kernel constructors, their launches and
arguments, expectations, contracts, dtypes, your own ops (``Op``, ``Tensor``, ``Invariant``, ``OpCase``,
``may_round``), the row-size helpers (size classes, vector widths, row limits), ``ctype`` (a dtype's C++ type in an entry name), and the exceptions a spec raises (``Unsupported`` to refuse a shape, ``SpecError`` for a malformed declaration).
docs/specs.md documents every field. Spec files import nothing else of verifier: the modules behind these names
are internal and may move.
"""
from __future__ import annotations

from verifier.declare.contracts import Contracts
from verifier.declare.cuda_types import ctype
from verifier.declare.args import LaunchLayout, Pointer, Scalar, Stride, Struct, Workspace
from verifier.declare.kernels import (CallableKernel, CudaKernel, Expectations, KernelSpec, Launch, MATH_MODES,
                                      TritonKernel, register_resident)
from verifier.declare.out_layouts import ColumnMajor, OutputLayout, RowStride
from verifier.declare.packages import package_path
from verifier.declare.sizing import SizeClasses, Tile, grid_limit, max_row, vector_width, whole_vectors
from verifier.declare.variants import FLOAT_IO, Dtypes, dtypes
from verifier.errors import SpecError, Unsupported, UsageError
from verifier.ops.model import ArgMax, Invariant, KeepTopK, Op, OpCase, Quantized, Selection, Tensor, may_round
from verifier.ops.row_numbers import batch_rows, row_numbers

__all__ = ["ArgMax", "CallableKernel", "Contracts", "CudaKernel", "Dtypes", "Expectations", "FLOAT_IO", "Invariant", "KeepTopK", "KernelSpec",
           "ColumnMajor", "Launch", "LaunchLayout", "OutputLayout", "RowStride", "MATH_MODES", "Op", "OpCase", "Pointer", "Quantized", "Scalar", "Selection", "SizeClasses", "SpecError", "Stride",
           "Struct", "Tensor", "Tile", "TritonKernel", "Unsupported", "UsageError", "Workspace", "batch_rows", "dtypes", "grid_limit",
           "ctype", "max_row", "may_round", "package_path", "register_resident", "row_numbers",
           "vector_width", "whole_vectors"]
