"""The C++ type a templated CUDA entry names for a dtype: ``ctype(dt.input)`` in an entry name
(``f"rms_norm_kernel<{ctype(dt.input)}>"``), so a spec does not carry its own table. Two spellings: the CUDA
headers' own (``__half``, ``__nv_bfloat16``, ``__nv_fp8_e4m3``) and PyTorch's (``c10::Half``, ``c10::BFloat16``,
``c10::Float8_e4m3fn``), which extensions built against torch instantiate their kernels with."""
from __future__ import annotations

from verifier import dtypes as _dt
from verifier.declare.variants import Dtypes
from verifier.errors import SpecError, UsageError

_CUDA = {"float64": "double", "float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16",
         "float8_e4m3fn": "__nv_fp8_e4m3", "float8_e5m2": "__nv_fp8_e5m2", "int8": "int8_t", "int32": "int",
         "int64": "int64_t"}
_C10 = {**_CUDA, "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float8_e4m3fn": "c10::Float8_e4m3fn",
        "float8_e5m2": "c10::Float8_e5m2"}
STYLES = {"cuda": _CUDA, "c10": _C10}


def ctype(dtype, style: str = "cuda") -> str:
    """The C++ type name of ``dtype`` (a dtype name or alias, a torch dtype, or a Dtypes: its input dtype):
    ``ctype("bf16") == "__nv_bfloat16"``, ``ctype("bf16", "c10") == "c10::BFloat16"``."""
    if style not in STYLES:
        raise SpecError(f"ctype: style {style!r}", fix=f"use one of {', '.join(map(repr, STYLES))}")
    try:
        name = _dt.canonical(dtype.input if isinstance(dtype, Dtypes) else dtype)
    except UsageError as e:
        raise SpecError(f"ctype: {e.message}", fix=e.fix) from None
    return STYLES[style][name]
