"""One tensor of an op as a spec declares it (``Tensor``) and as the framework uses it (``Role``): shapes in M, N,
integers and int params, roles, fixed dtypes or the param naming them; the parsing of ``Op(inputs=..., outputs=...)``."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from verifier.errors import SpecError, UsageError


SHAPES = ("rows", "vector", "row", "other")  # (M, N), (N,), (M,), anything else
KINDS = ("data", "weight", "bias", "labels", "scale")
# The role names a spec writes, and the kind each is: 'input' is drawn by the case's sampler, 'index' holds
# integer class or column indices.
ROLE_NAMES = {"input": "data", "data": "data", "weight": "weight", "bias": "bias", "index": "labels",
              "labels": "labels", "scale": "scale"}
PUBLIC_ROLE = {"data": "input", "weight": "weight", "bias": "bias", "labels": "index", "scale": "scale"}
_DIM = re.compile(r"^(?:M|N|\d+|[A-Za-z_]\w*|N/[A-Za-z_]\w*)$")  # N/p: N divided by an int param
TENSOR_NAME = re.compile(r"^[A-Za-z_]\w*$")


def parse_shape(text: str, where: str) -> tuple:
    """'MxN' -> ('M', 'N'); '1' -> (1,); 'MxG' -> ('M', 'G'); 'MxN/group_size' -> ('M', 'N/group_size'). Dims are
    M, N, integers, int param names or N/p, N divided by the int param p (one value per group of p elements of a
    row: a per-group scale; the op's ``supports`` refuses N not a multiple of p)."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"{where}: shape {text!r} is not a string of dims", fix="write e.g. 'MxN', 'N', 'M' or 'MxG'")
    dims = tuple(d.strip() for d in text.split("x"))
    if not all(_DIM.match(d) for d in dims):
        raise SpecError(f"{where}: shape {text!r} is not dims joined by 'x'",
                        fix="write dims joined by 'x': M, N, an integer, an integer param or N/param, e.g. 'MxN', 'MxG' "
                            "or 'MxN/group_size'")
    return tuple(int(d) if d.isdigit() else d for d in dims)


def kind_of(dims: tuple) -> str:
    return {("M", "N"): "rows", ("N",): "vector", ("M",): "row"}.get(dims, "other")


@dataclass(frozen=True)
class Tensor:
    """One tensor of an op: ``shape`` (e.g. 'MxN', 'N', 'M', 'MxG'), ``role`` (inputs: 'input' drawn by the case's
    sampler, 'weight' 1 + 0.1·N(0,1), 'bias' 0.1·N(0,1), 'scale' positive float32, 'index' integers in [0, N) or from
    ``make``), ``dtype`` (a fixed dtype, e.g. 'int32' or 'float32', or the name of the str param holding it; default: the
    kernel variant's dtype for the role) and ``make(rng, x, params, policy) -> array`` (how to draw it, seeing the
    drawn x as float64: index roles, an additive mask of -inf, a causal pattern). ``optional=True``: an input only
    the kernels that declare it take; the op has a param of the same name, default None (absent), which a kernel
    sets to True (the declared shape) or to a shape the declared one broadcasts from (``"N"`` for an ``"MxN"``
    mask): see ``Op.variant``. An output ``Tensor(..., optional=True)`` is an extra output only the kernels that set
    its param to True write (the per-row lse a cross entropy also stores), judged like the others when present."""

    shape: str
    role: Optional[str] = None
    dtype: Optional[str] = None
    make: Optional[Callable] = field(default=None, repr=False, compare=False)
    optional: bool = False


@dataclass(frozen=True)
class Role:
    """One input tensor as the framework uses it. kind 'data': drawn by the case's sampler; 'weight':
    1 + 0.1·N(0,1); 'bias': 0.1·N(0,1) (never all ones / zeros, so a kernel ignoring them fails); 'scale': positive
    float32 (0.5 + U[0, 1)); 'labels': integer indices drawn by ``make(rng, x, params, policy)`` (default uniform in
    [0, N)). ``dtype_param``: the op param naming the tensor's dtype; ``dtype``: a fixed dtype; else the kernel's
    input dtype (weights and biases: the variant's weight dtype). ``dims``: the shape in M, N, ints and params."""

    name: str
    shape: str = "rows"
    kind: str = "data"
    dtype_param: Optional[str] = None
    make: Optional[Callable] = field(default=None, repr=False, compare=False)
    dims: tuple = ()
    dtype: Optional[str] = None

    def __post_init__(self):
        if self.shape not in SHAPES or self.kind not in KINDS:
            raise ValueError(f"Role {self.name}: shape {self.shape!r} / kind {self.kind!r}")
        if not self.dims:
            object.__setattr__(self, "dims", {"rows": ("M", "N"), "vector": ("N",), "row": ("M",)}[self.shape])

    @property
    def per_row(self) -> bool:
        """Its first dim is M: row r of the op owns element r (judging some rows slices it)."""
        return bool(self.dims) and self.dims[0] == "M"


def input_role(where: str, name: str, decl, params: dict) -> Role:
    t = decl if isinstance(decl, Tensor) else Tensor(decl)
    dims = parse_shape(t.shape, f"{where}: input {name!r}")
    default = "data" if dims == ("M", "N") or name == "x" else "bias" if name == "b" else "weight" \
        if dims == ("N",) else "data"
    role = t.role or default
    if role not in ROLE_NAMES:
        raise SpecError(f"{where}: input {name!r} has role {role!r}", fix=f"use one of {', '.join(ROLE_NAMES)}")
    kind = ROLE_NAMES[role]
    dtype = dtype_param = None
    if isinstance(t.dtype, str) and t.dtype in params and (params[t.dtype] is None or isinstance(params[t.dtype], str)):
        dtype_param = t.dtype  # the param that holds it, e.g. label_dtype='int64' (None: the role's default dtype)
    elif t.dtype is not None:
        from verifier import dtypes as _dt

        try:
            dtype = _dt.canonical(t.dtype)
        except UsageError as e:
            raise SpecError(f"{where}: input {name!r}: {e.message}", fix=e.fix) from None
    if t.make is not None and not callable(t.make):
        raise SpecError(f"{where}: input {name!r}: make must be a function", fix="make=fn(rng, x, params, policy)")
    return Role(name, kind_of(dims), kind, dtype_param=dtype_param, make=t.make, dims=dims, dtype=dtype)


def check_optional(where: str, name: str, role: Optional[Role], params: dict, output: bool = False) -> None:
    if output and params.get(name, "missing") not in (None, True):
        raise SpecError(f"{where}: optional output {name!r} needs a param of its name, default None (written only by "
                        "the kernels that set it True) or True (written unless a kernel sets it False)",
                        fix=f"add params={{{name!r}: None}}: a kernel sets it to True when it also writes {name}")
    if output:
        return
    if name == "x" or params.get(name, "missing") is not None:
        raise SpecError(f"{where}: optional input {name!r} needs a param of its name, default None",
                        fix=f"add params={{{name!r}: None}}: a kernel sets it to True (or a shape) to take {name}")


def output_decl(where: str, name: str, decl, params: Optional[dict] = None, quantized: bool = False) -> tuple:
    """(dims, declared dtype or None) of an output: ``"MxN"`` is in the variant's output dtype; ``Tensor("M",
    dtype="float32")`` (a per-row scale) or ``Tensor("MxK", dtype="int32")`` (indices, compared exactly) is fixed;
    ``Tensor("MxK", dtype="index_dtype")`` names the str param holding it (returned as that name)."""
    t = decl if isinstance(decl, Tensor) else Tensor(decl)
    if t.role not in (None, "output"):
        raise SpecError(f"{where}: output {name!r} declares role {t.role!r}",
                        fix="outputs take a shape and, when it is not the variant's output dtype, a dtype")
    dims = parse_shape(t.shape, f"{where}: output {name!r}")
    if dims != (1,) and (not dims or dims[0] != "M"):
        raise SpecError(f"{where}: output {name!r} has shape {t.shape!r}, not one row per input row (nor '1', one "
                        "value for the whole batch)", fix="outputs are per row ('MxN', 'M', 'MxK') or '1' (a reduction "
                                                          "over the rows, e.g. a mean loss)")
    dtype = None
    if isinstance(t.dtype, str) and isinstance((params or {}).get(t.dtype), str):
        _output_dtype(where, name, params[t.dtype])  # the default must be a dtype an output can have
        return dims, t.dtype
    if t.dtype is not None:
        dtype = _output_dtype(where, name, t.dtype, quantized)
    return dims, dtype


def _output_dtype(where: str, name: str, text, quantized: bool = False) -> str:
    from verifier import dtypes as _dt

    try:
        dtype = _dt.canonical(text)
    except UsageError as e:
        raise SpecError(f"{where}: output {name!r}: {e.message}", fix=e.fix) from None
    if dtype in ("int8", "uint8", "int16") and not quantized:
        raise SpecError(f"{where}: output {name!r} in {dtype}",
                        fix="integer outputs are int32 or int64; an int8 output is quantized: declare it in "
                            "quantized={name: Quantized(scale=...)}")
    return dtype
