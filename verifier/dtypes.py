"""Canonical dtype names and conversions between numpy (ml_dtypes), torch and strings.

Every other module names dtypes by the canonical strings in ``FLOAT_DTYPES`` /
``INT_DTYPES``; an unknown name is an error (never a silent default).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from verifier.errors import UsageError

FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
INT_DTYPES = ("int8", "int32", "int64")  # int64: integer roles (labels), not kernel I/O dtypes
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES

_ALIASES = {
    "f64": "float64", "fp64": "float64", "double": "float64",
    "f32": "float32", "fp32": "float32", "float": "float32",
    "f16": "float16", "fp16": "float16", "half": "float16",
    "bf16": "bfloat16",
    "e4m3": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "float8_e4m3": "float8_e4m3fn",
    "e5m2": "float8_e5m2", "fp8_e5m2": "float8_e5m2",
    "i8": "int8", "i32": "int32", "i64": "int64",
}

_NUMPY = {
    "float64": np.dtype(np.float64),
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "int8": np.dtype(np.int8),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
}

# Short names used in test ids and kernel names.
SHORT = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2", "int8": "i8", "int32": "i32", "int64": "i64",
}


def canonical(dtype) -> str:
    """Return the canonical name of ``dtype`` (a string, numpy dtype, ml_dtypes type or torch dtype)."""
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
        if name in _NUMPY:
            return name
        raise UsageError(
            f"unknown dtype {dtype!r}",
            fix=f"use one of {', '.join(ALL_DTYPES)} (or a short alias such as bf16, f16, e4m3)",
        )
    mod = type(dtype).__module__
    if mod.startswith("torch"):
        return canonical(str(dtype).removeprefix("torch."))
    try:
        npd = np.dtype(dtype)
    except TypeError:
        raise UsageError(f"unknown dtype {dtype!r}", fix=f"use one of {', '.join(ALL_DTYPES)}") from None
    for name, d in _NUMPY.items():
        if d == npd:
            return name
    raise UsageError(f"unsupported dtype {npd}", fix=f"use one of {', '.join(ALL_DTYPES)}")


def numpy_dtype(dtype) -> np.dtype:
    return _NUMPY[canonical(dtype)]


def torch_dtype(dtype):
    import torch

    return getattr(torch, canonical(dtype))


def is_float(dtype) -> bool:
    return canonical(dtype) in FLOAT_DTYPES


def finfo(dtype):
    """numpy/ml_dtypes finfo for a float dtype."""
    name = canonical(dtype)
    if name not in FLOAT_DTYPES:
        raise UsageError(f"{name} is not a floating-point dtype", fix="pass a float dtype")
    return ml_dtypes.finfo(_NUMPY[name])


def unit_roundoff(dtype) -> float:
    """u = 2**-p for a dtype with p significand bits (half an ulp of 1.0)."""
    return float(finfo(dtype).eps) / 2.0


def to_numpy(x, dtype=None) -> np.ndarray:
    """A numpy array (on the host) holding exactly the values of ``x`` (numpy array or torch tensor).

    torch bfloat16 / float8 tensors are reinterpreted bit-for-bit into ml_dtypes arrays,
    so no value changes on the way.
    """
    mod = type(x).__module__
    if mod.startswith("torch"):
        import torch

        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        name = canonical(t.dtype)
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            bits = t.contiguous().view(torch.int16 if name == "bfloat16" else torch.uint8).numpy()
            arr = bits.view(_NUMPY[name])
        else:
            arr = t.numpy()
    else:
        arr = np.asarray(x)
    if dtype is not None:
        arr = arr.astype(numpy_dtype(dtype))
    return arr


def from_numpy(arr: np.ndarray, device="cpu"):
    """A torch tensor holding exactly the values of ``arr`` (ml_dtypes arrays included)."""
    import torch

    arr = np.ascontiguousarray(arr)
    name = canonical(arr.dtype)
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        view = np.int16 if name == "bfloat16" else np.uint8
        t = torch.from_numpy(arr.view(view).copy()).view(torch_dtype(name))
    else:
        t = torch.from_numpy(arr.copy())
    return t.to(device) if device != "cpu" else t
