"""Launch arguments as the C ABI sees them: scalars of every C width, pointers (to an op tensor, at an element
offset, or null), row strides, workspaces, and C structs passed by value (nested, with arrays such as a fast-divmod
``uint3`` pack), each with the size and alignment the C layout rules give it.

Every argument of a ``Launch`` is one of these classes (:func:`as_arg` turns the string forms into them: a tensor
name is ``Pointer(name)``, ``'M'`` / ``'N'`` are ``Scalar('int32', ...)``, ``'eps'`` is ``Scalar('float32',
'eps')``, ``'x.stride'`` is ``Stride('x')``, ``'tmp:...'`` a Workspace). Each one knows its ``size`` and ``align``
in bytes (checked against the compiled entry's parameter list, verifier.toolchain.entry_params), a short
``describe()`` for messages, and its ``leaves()``: (byte offset, C type, value) of every scalar it is made of, which
verifier.launch.cuda resolves (tensor addresses, M, N, params) and packs into the bytes the kernel receives.

A value may be a number or one of the symbols 'M', 'N', 'eps', a Stride or 'x.stride' (resolved per call). Values
are range-checked for their C type: numbers here, symbols when they are bound.
:class:`LaunchLayout` (verifier.declare.layout, re-exported here) is what a five-parameter ``launches(M, N, dt,
params, layout)`` receives: each tensor's alignment and row stride, and the device's SM count and opt-in shared
memory, so a spec can model a host dispatch on them.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import SpecError
from verifier.declare.layout import (MAX_ALIGN, MODEL_SM_COUNT, MODEL_SMEM_OPTIN, LaunchLayout,  # noqa: F401
                                     alignment_of)  # re-exported: their home is verifier.declare.layout

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")

# C type -> numpy dtype: the scalar kinds a launch argument or a struct field may have.
SCALAR_KINDS = {"bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
                "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
                "float32": np.float32, "float64": np.float64}
PTR = "ptr"  # a 64-bit device address
PTR_SIZE = 8
SYMBOLS = ("M", "N", "eps")  # values bound per call: the shape and the op's eps param
STRIDE_SUFFIX = ".stride"  # "x.stride": the row stride of tensor x, in elements, as int32
_ARRAY = re.compile(r"^\s*(\w+)\s*\[\s*(\d+)\s*\]\s*$")


def _kinds_fix() -> str:
    return f"use one of {', '.join(SCALAR_KINDS)} (or 'ptr', 'struct', arrays such as 'uint32[3]' in a Struct)"


def scalar_size(kind: str) -> int:
    """Bytes of a scalar kind or 'ptr'."""
    return PTR_SIZE if kind == PTR else np.dtype(SCALAR_KINDS[kind]).itemsize


def check_value(kind: str, value, where: str):
    """``value`` as a Python number of scalar ``kind``; a SpecError naming ``where`` when it is not one or is out
    of the kind's range."""
    bad = SpecError(f"{where}: {value!r} is not a value of C type {kind}", fix=f"pass a number that fits {kind}")
    if kind == "bool":
        if isinstance(value, (bool, np.bool_)) or (hasattr(value, "__index__") and int(value) in (0, 1)):
            return bool(value)
        raise SpecError(f"{where}: {value!r} is not a bool", fix="pass True, False, 0 or 1")
    if np.issubdtype(SCALAR_KINDS[kind], np.integer):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        if not hasattr(value, "__index__"):
            raise bad
        info = np.iinfo(SCALAR_KINDS[kind])
        v = int(value)
        if not info.min <= v <= info.max:
            raise SpecError(f"{where}: {v} is out of range for {kind} ({info.min} .. {info.max})",
                            fix="pass a value in range, or declare a wider kind (int64, uint64)")
        return v
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise bad from None
    if math.isfinite(v) and abs(v) > float(np.finfo(SCALAR_KINDS[kind]).max):
        raise SpecError(f"{where}: {v!r} is out of range for {kind} (max {float(np.finfo(SCALAR_KINDS[kind]).max):g})",
                        fix="pass a value in range, or declare float64")
    return v


def _symbol(value) -> bool:
    return isinstance(value, str) and value in SYMBOLS


class _OneScalar:
    """An argument passed as one C scalar of type ``kind``: its size is its alignment (Scalar, Stride)."""

    kind: str

    @property
    def nbytes(self) -> int:
        return scalar_size(self.kind)

    @property
    def align(self) -> int:
        return self.nbytes


@dataclass(frozen=True)
class Scalar(_OneScalar):
    """A scalar kernel argument of C type ``kind`` (bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64,
    float32, float64); ``value`` a number, or 'M', 'N', 'eps' (bound per call)."""

    kind: str
    value: Any

    def __post_init__(self):
        if self.kind not in SCALAR_KINDS:
            raise SpecError(f"Scalar kind {self.kind!r} is not a C scalar type", fix=f"use one of {', '.join(SCALAR_KINDS)}")
        if not _symbol(self.value) and not isinstance(self.value, Stride) and stride_of(self.value) is None:
            check_value(self.kind, self.value, f"Scalar({self.kind!r}, {self.value!r})")

    def describe(self) -> str:
        return f"{self.kind} {_short(self.value)}"

    def leaves(self, base: int = 0):
        return [(base, self.kind, self.value)]


@dataclass(frozen=True)
class Stride(_OneScalar):
    """The row stride of a 2-D tensor of the op, in elements, as a launch argument of C type ``kind`` ('int32' or
    'int64'); the string ``"x.stride"`` is ``Stride("x")``. A launch that passes a tensor's stride is given that
    tensor with rows N + 64 elements apart in the strided cases (verifier.inputs.layouts). ``shared_with``: the
    other tensors the kernel indexes with this one stride (PyTorch's softmax_warp_forward takes one stride for its
    input and output): the strided cases lay them out at ``tensor``'s stride, the others at strides of their own."""

    tensor: str
    kind: str = "int32"
    shared_with: tuple = ()

    def __post_init__(self):
        if self.kind not in ("int32", "int64"):
            raise SpecError(f"Stride({self.tensor!r}, {self.kind!r}): kind must be 'int32' or 'int64'",
                            fix=f"write Stride({self.tensor!r}, 'int64') for a 64-bit stride")
        shared = (self.shared_with,) if isinstance(self.shared_with, str) else tuple(self.shared_with)
        if not all(isinstance(t, str) and t for t in shared) or self.tensor in shared:
            raise SpecError(f"Stride({self.tensor!r}, shared_with={self.shared_with!r}): name the other tensors "
                            f"indexed with {self.tensor!r}'s stride", fix=f"e.g. Stride({self.tensor!r}, "
                            "shared_with=('y',))")
        object.__setattr__(self, "shared_with", shared)

    def describe(self) -> str:
        also = f" (also {', '.join(self.shared_with)}'s)" if self.shared_with else ""
        return f"{self.kind} {self.tensor}.stride{also}"

    def leaves(self, base: int = 0):
        return [(base, self.kind, self)]


def stride_of(arg) -> Optional[Stride]:
    """The Stride a launch argument asks for: a Stride, or the string '<tensor>.stride'; None otherwise."""
    if isinstance(arg, Stride):
        return arg
    if isinstance(arg, str) and arg.endswith(STRIDE_SUFFIX) and len(arg) > len(STRIDE_SUFFIX):
        return Stride(arg[:-len(STRIDE_SUFFIX)])
    return None


@dataclass(frozen=True)
class Workspace:
    """A device buffer the kernel gets as scratch (a launch argument): ``count`` elements of ``dtype``, left
    uninitialized (as ``torch.empty`` leaves it). ``count`` is an int or a function ``count(M, N) -> int``.
    The same Workspace in several launches of one call is one buffer (a pass writes it, the next reads it).
    ``values``: the buffer's contents when the call starts instead, a sequence of ``count`` numbers or a function
    ``values(M, N)`` giving them: the shape metadata a host copies to the device for its kernel (candle's
    ``info`` array of dims and strides)."""

    name: str
    count: Any
    dtype: str = "float32"
    values: Any = field(default=None, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise SpecError(f"Workspace name {self.name!r} is not a valid name", fix="use letters, digits, '_', '-'")
        if not (callable(self.count) or (isinstance(self.count, int) and not isinstance(self.count, bool))):
            raise SpecError(f"Workspace {self.name!r}: count {self.count!r} is neither an int nor a function of (M, N)",
                            fix="e.g. Workspace('rstd', lambda M, N: M, 'float32')")
        try:
            object.__setattr__(self, "dtype", _dt.canonical(self.dtype))
        except Exception as e:
            raise SpecError(f"Workspace {self.name!r}: {getattr(e, 'message', e)}", fix=getattr(e, "fix", None)) from None
        if self.values is not None and not callable(self.values) and isinstance(self.values, (str, bytes)):
            raise SpecError(f"Workspace {self.name!r}: values {self.values!r} is neither numbers nor a function of "
                            "(M, N)", fix="e.g. values=lambda M, N: (M, N, N, 1)")

    def contents(self, M: int, N: int) -> Optional[np.ndarray]:
        """The buffer's contents at the start of an M x N call (None: left uninitialized); a SpecError names the
        workspace where they are not ``size(M, N)`` numbers of its dtype."""
        if self.values is None:
            return None
        n = self.size(M, N)
        got = self.values(M, N) if callable(self.values) else self.values
        fix = f"give {n} numbers that fit {self.dtype} (values=lambda M, N: ...)"
        try:
            seq = [v for v in got]
        except TypeError:
            raise SpecError(f"Workspace {self.name!r}: values({M}, {N}) gave {got!r}, not a sequence",
                            fix=fix) from None
        if len(seq) != n:
            raise SpecError(f"Workspace {self.name!r}: values({M}, {N}) gave {len(seq)} numbers for {n} elements",
                            fix=fix)
        from verifier.dtypes import numpy_dtype

        arr = np.asarray(seq, dtype=np.float64 if self.dtype.startswith(("float", "bfloat")) else object)
        kind = {"int8": "int8", "int32": "int32", "int64": "int64"}.get(self.dtype)
        if kind is not None:  # integers: each checked against the C type's range, never wrapped
            for i, v in enumerate(seq):
                check_value(kind, v, f"Workspace {self.name!r}: values({M}, {N})[{i}]")
            return np.asarray([int(v) for v in seq], dtype=SCALAR_KINDS[kind])
        return arr.astype(numpy_dtype(self.dtype))

    def size(self, M: int, N: int) -> int:
        """Elements for an M x N call; a negative or non-integer count is a SpecError naming the workspace."""
        n = self.count(M, N) if callable(self.count) else self.count
        if isinstance(n, bool) or not hasattr(n, "__index__"):
            raise SpecError(f"Workspace {self.name!r}: count({M}, {N}) gave {n!r}, not a whole number",
                            fix="return an int from the count function")
        n = int(n)
        if n < 0:
            raise SpecError(f"Workspace {self.name!r}: count({M}, {N}) gave {n} elements", fix="return a count >= 0")
        return n

    # The C side: a pointer.
    nbytes = PTR_SIZE
    align = PTR_SIZE

    def describe(self) -> str:
        return f"ptr workspace {self.name}"

    def leaves(self, base: int = 0):
        return [(base, PTR, self)]


def workspace_of(arg) -> Optional[Workspace]:
    """The Workspace a launch argument asks for: a Workspace, or the older string form
    'tmp:<name>:<count expression in M, N>:<dtype>' (still accepted); None for any other argument."""
    if isinstance(arg, Workspace):
        return arg
    if not (isinstance(arg, str) and arg.startswith("tmp:")):
        return None
    parts = arg.split(":")
    bad = SpecError(f"temporary buffer argument {arg!r} is malformed",
                    fix="write Workspace(name, count, dtype), e.g. Workspace('rstd', lambda M, N: M, 'float32')")
    if len(parts) != 4:
        raise bad

    def count(M, N, expr=parts[2]):
        try:
            return int(eval(expr, {"__builtins__": {}}, {"M": M, "N": N}))  # e.g. 'M', '2*M*(N//8192+1)'
        except Exception:
            raise bad from None

    try:
        return Workspace(parts[1], count, parts[3])
    except SpecError:
        raise bad from None


@dataclass(frozen=True)
class Pointer:
    """A device pointer: to op tensor ``tensor`` (``offset`` elements into it, within the tensor), or null
    (``Pointer(None)``). C: ``const float* x``, ``T* p = nullptr``."""

    tensor: Optional[str]
    offset: int = 0

    def __post_init__(self):
        if self.tensor is not None and not (isinstance(self.tensor, str) and self.tensor):
            raise SpecError(f"Pointer({self.tensor!r}): name an op tensor ('x') or pass None for a null pointer",
                            fix="e.g. Pointer('x', offset=1) or Pointer(None)")
        if isinstance(self.offset, bool) or not hasattr(self.offset, "__index__"):
            raise SpecError(f"Pointer({self.tensor!r}, offset={self.offset!r}): the offset is a count of elements",
                            fix="pass an int offset")
        object.__setattr__(self, "offset", int(self.offset))
        if self.tensor is None and self.offset:
            raise SpecError(f"Pointer(None, offset={self.offset}): a null pointer has no offset",
                            fix="write Pointer(None), or name the tensor the offset is into")

    nbytes = PTR_SIZE
    align = PTR_SIZE

    def describe(self) -> str:
        if self.tensor is None:
            return "ptr null"
        return f"ptr {self.tensor}" + (f"+{self.offset}" if self.offset else "")

    def leaves(self, base: int = 0):
        return [(base, PTR, self)]


def _align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


@dataclass(frozen=True)
class Field:
    """One member of a Struct, laid out: its C type, value, byte offset, size and alignment."""

    ctype: str
    value: Any
    offset: int
    size: int
    align: int

    def leaves(self, base: int):
        at = base + self.offset
        if isinstance(self.value, Struct):
            return self.value.leaves(at)
        m = _ARRAY.match(self.ctype)
        if m:
            step = scalar_size(m.group(1))
            return [(at + i * step, m.group(1), v) for i, v in enumerate(self.value)]
        return [(at, self.ctype, self.value)]

    def describe(self) -> str:
        if isinstance(self.value, Struct):
            return self.value.describe()
        if _ARRAY.match(self.ctype):
            return f"{self.ctype} {{{', '.join(_short(v) for v in self.value)}}}"
        return f"{self.ctype} {_short(self.value)}"


def _check_leaf(kind: str, value, where: str) -> None:
    """A struct member's value is valid for its C type (symbols are checked when bound)."""
    if kind == PTR:
        if value is None or isinstance(value, (Pointer, Workspace)) or workspace_of(value) is not None:
            return
        if isinstance(value, str) and value and not _symbol(value) and stride_of(value) is None:
            return
        raise SpecError(f"{where}: a 'ptr' member takes an op tensor name, Pointer(...) or a Workspace, "
                        f"not {value!r}", fix="e.g. ('ptr', 'x'), ('ptr', Pointer('x', offset=1)), ('ptr', None)")
    if _symbol(value) or stride_of(value) is not None:
        return
    check_value(kind, value, where)


class Struct:
    """A C struct passed by value. ``fields``: its members in order, each ``(ctype, value)``: ctype a scalar
    kind (SCALAR_KINDS) with a number or 'M' / 'N' / 'eps' / a Stride; 'ptr' with an op tensor name, a
    Pointer or a Workspace (None: a null pointer); an array 'uint32[3]' with a sequence of that many values; or
    'struct' with a nested Struct. Laid out as C does: each member at the next multiple of its alignment, the size
    padded to the largest alignment; ``align`` raises the struct's alignment (``struct __align__(16) P``).
    ``Struct([])`` is an empty struct (a stateless functor such as ``struct Identity {}``): one byte, as in C++."""

    def __init__(self, fields, align: Optional[int] = None):
        if isinstance(fields, (str, bytes)) or not hasattr(fields, "__iter__"):
            raise SpecError(f"Struct({fields!r}): fields must be a list of (ctype, value) pairs",
                            fix='e.g. Struct([("ptr", "x"), ("uint32", N), ("float32", params["eps"])])')
        laid, off, most = [], 0, 1
        for i, f in enumerate(fields):
            if not (isinstance(f, (tuple, list)) and len(f) == 2 and isinstance(f[0], str)):
                raise SpecError(f"Struct field {i}: {f!r} is not a (ctype, value) pair",
                                fix='e.g. ("uint32", N) or ("ptr", "x")')
            ctype, value = f[0].strip(), f[1]
            size, al = self._member(i, ctype, value)
            off = _align_up(off, al)
            laid.append(Field(ctype, value, off, size, al))
            off += size
            most = max(most, al)
        if align is not None:
            if isinstance(align, bool) or not isinstance(align, int) or align < 1 or align & (align - 1):
                raise SpecError(f"Struct(align={align!r}): the alignment is a power of two in bytes",
                                fix="e.g. align=16 for struct __align__(16)")
            if align < most:
                raise SpecError(f"Struct(align={align}): its members need alignment {most}; __align__ cannot lower it",
                                fix=f"leave align out, or use align >= {most}")
            most = align
        self.fields = tuple(laid)
        self.align = most
        self.nbytes = _align_up(max(off, 1), most)  # an empty struct (a stateless functor) is 1 byte in C++

    @staticmethod
    def _member(i: int, ctype: str, value) -> tuple:
        """(size, alignment) of member ``i``, its value checked against its C type."""
        where = f"Struct field {i} ({ctype})"
        if ctype == "struct":
            if not isinstance(value, Struct):
                raise SpecError(f"{where}: the value of a 'struct' member is a Struct, not {value!r}",
                                fix='e.g. ("struct", Struct([("uint32", 1), ("uint32", 2)]))')
            return value.nbytes, value.align
        if isinstance(value, Struct):
            raise SpecError(f"{where}: a nested Struct is declared with ctype 'struct'", fix='write ("struct", Struct(...))')
        m = _ARRAY.match(ctype)
        if m:
            kind, n = m.group(1), int(m.group(2))
            if kind not in SCALAR_KINDS and kind != PTR:
                raise SpecError(f"{where}: {kind!r} is not a C scalar type", fix=_kinds_fix())
            if n < 1 or isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != n:
                raise SpecError(f"{where}: an array of {n} takes a sequence of {n} values, not {value!r}",
                                fix=f"e.g. (\"{kind}[{n}]\", ({', '.join(['0'] * max(n, 1))}))")
            for j, v in enumerate(value):
                _check_leaf(kind, v, f"{where}[{j}]")
            return n * scalar_size(kind), scalar_size(kind)
        if ctype not in SCALAR_KINDS and ctype != PTR:
            raise SpecError(f"{where}: {ctype!r} is not a C type a struct member can have", fix=_kinds_fix())
        _check_leaf(ctype, value, where)
        return scalar_size(ctype), scalar_size(ctype)

    def leaves(self, base: int = 0):
        return [leaf for f in self.fields for leaf in f.leaves(base)]

    def describe(self) -> str:
        return f"struct {{{', '.join(f.describe() for f in self.fields)}}} ({self.nbytes} bytes, align {self.align})"

    def __repr__(self):
        return f"Struct({[(f.ctype, f.value) for f in self.fields]!r}" + \
            (f", align={self.align})" if self.align != max([f.align for f in self.fields], default=1) else ")")

    def __eq__(self, other):
        return isinstance(other, Struct) and (self.fields, self.align) == (other.fields, other.align)

    def __hash__(self):
        return hash((self.fields, self.align)) if all(_hashable(f.value) for f in self.fields) else id(self)


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _short(value) -> str:
    if isinstance(value, Stride):
        return f"{value.tensor}.stride"
    if isinstance(value, (Pointer, Workspace)):
        return value.describe()[4:]
    if value is None:
        return "null"
    return str(value) if isinstance(value, str) else repr(value)


ARG_TYPES = (Scalar, Stride, Workspace, Pointer, Struct)


def as_arg(a):
    """The argument class of a launch argument, its string forms included: a tensor name is a Pointer, 'M' and
    'N' int32 Scalars, 'eps' a float32 Scalar, 'x.stride' a Stride, 'tmp:...' a Workspace. A SpecError for
    anything else."""
    if isinstance(a, ARG_TYPES):
        return a
    if a is None:
        return Pointer(None)
    if isinstance(a, str):
        if a in ("M", "N"):
            return Scalar("int32", a)
        if a == "eps":
            return Scalar("float32", a)
        s = stride_of(a)
        if s is not None:
            return s
        w = workspace_of(a)
        if w is not None:
            return w
        if a:
            return Pointer(a)
    raise SpecError(f"launch argument {a!r} ({type(a).__name__}) is not a launch argument",
                    fix="use a tensor name, 'M', 'N', 'eps', '<tensor>.stride', Scalar(kind, value), Pointer(...), "
                        "Struct([...]), Stride(...) or Workspace(...)")

