"""Outputs a kernel writes at a layout of its own (``output_layout={"ids": RowStride("N")}``).

A production kernel often writes an output into a slice of a bigger buffer rather than a fresh tensor of the
output's own width: ggml's fused MoE top-k writes its ``ids[M, k]`` rows ``n_expert`` elements apart (the first k
columns of the argsort result it replaces), a quantizer writes per-group scales column-major for a TMA-fed FP8
GEMM (DeepGEMM, vLLM's ``per_token_group_quant_fp8(column_major_scales=True)``), a kernel writes ``out[:, :k]`` of
a wider buffer. The kernel is not told that stride: it is part of its code. Declared here, the harness
(verifier.launch.harness) allocates that output at the declared strides and gives the kernel a view of it; the
elements outside the view are padding, poisoned and checked as the strided case's gaps are: a write there is an
``out-of-range-write`` (in production the padding is another tensor's data, or the rest of the bigger buffer).
The judge reads the logical view only. The large cases (verifier.launch.large) lay out a 2-D output's rows at
its declared stride on their aliased pages; other layouts are listed there as not checked (verifier.battery.gate).

Each layout is a class giving an output's element strides; a value is an int, ``"N"`` / ``"M"`` (the row count or
length of the op's x), or a function ``fn(M, N, params) -> int``.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

from verifier.errors import SpecError, VerifierError

Value = Union[int, str, Callable]


def _checked_value(v, what: str):
    if isinstance(v, bool) or not (isinstance(v, int) and v > 0 or v in ("M", "N") or callable(v)):
        raise SpecError(f"{what} is {v!r}",
                        fix="give a positive int, 'N' (the row length of x), 'M' (its rows), or a function "
                            "fn(M, N, params) -> int")
    return v


def _resolve(spec, v, M: int, N: int, params: dict) -> int:
    if v == "N":
        return int(N)
    if v == "M":
        return int(M)
    if callable(v):
        from verifier.declare.usercode import call

        got = call(spec, "output_layout", v, M, N, params)
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            raise SpecError(f"kernel {spec.name!r}: an output_layout function returned {got!r} for M={M}, N={N}",
                            fix="return an int: the stride in elements")
        return int(got)
    return int(v)


def _shown(v) -> str:
    return f"<function {v.__qualname__}>" if callable(v) else repr(v)


class OutputLayout:
    """Where an output's elements lie in its buffer: ``strides`` gives them in elements, ``ndims`` says which output
    shapes the layout applies to."""

    ndims: tuple = (2,)

    def strides(self, spec, name: str, shape: tuple, M: int, N: int, params: dict) -> tuple:
        raise NotImplementedError

    def in_large_cases(self, ndim: int) -> bool:
        """Whether the large cases (verifier.launch.large) lay it out: rows a stride apart on aliased pages only."""
        return False


class RowStride(OutputLayout):
    """Rows ``stride`` elements apart (a 2-D ``[M, k]`` output: element (i, j) at i·stride + j, stride >= k; a 1-D
    ``[M]`` output: element i at i·stride). ggml's ``topk_moe`` ids: ``RowStride("N")``."""

    ndims = (1, 2)

    def __init__(self, stride: Value):
        self.stride = _checked_value(stride, "RowStride's stride")

    def strides(self, spec, name, shape, M, N, params) -> tuple:
        s = _resolve(spec, self.stride, M, N, params)
        need = shape[1] if len(shape) == 2 else 1
        if s < need:
            raise SpecError(f"kernel {spec.name!r}: output_layout {name!r}: {self!r} gives rows {s} elements apart at "
                            f"M={M}, N={N}, shorter than the output's rows of {need}",
                            fix="declare the row stride the kernel writes at: at least the output's row length")
        return (s, 1) if len(shape) == 2 else (s,)

    def in_large_cases(self, ndim: int) -> bool:
        return ndim == 2

    def __repr__(self):
        return f"RowStride({_shown(self.stride)})"


class ColumnMajor(OutputLayout):
    """A 2-D ``[M, G]`` output stored column by column: element (i, j) at j·ld + i, ``ld`` >= M (default M; a
    function for a padded one, e.g. TMA-aligned scales ``lambda M, N, p: -(-M // 4) * 4``)."""

    def __init__(self, ld: Optional[Value] = None):
        self.ld = "M" if ld is None else _checked_value(ld, "ColumnMajor's ld")

    def strides(self, spec, name, shape, M, N, params) -> tuple:
        ld = _resolve(spec, self.ld, M, N, params)
        if ld < shape[0]:
            raise SpecError(f"kernel {spec.name!r}: output_layout {name!r}: {self!r} gives columns {ld} elements apart "
                            f"at M={M}, N={N}, shorter than the output's {shape[0]} rows",
                            fix="declare the leading dimension the kernel writes at: at least M")
        return (1, ld)

    def __repr__(self):
        return f"ColumnMajor({_shown(self.ld)})"


def check_output_layout(kernel: str, op, layouts, aliases) -> dict:
    """``output_layout`` validated at construction: a dict naming outputs of the op (not in-out, not written over an
    input: those share the input's buffer) with an OutputLayout of a fitting shape each."""
    if not layouts:
        return {}
    if not isinstance(layouts, dict):
        raise SpecError(f"kernel {kernel!r}: field 'output_layout' must be a dict output -> layout",
                        fix="e.g. output_layout={'ids': RowStride('N')} (from verifier.spec import RowStride)")
    own = [o for o in op.outputs if o not in op.inouts and o not in aliases]
    for name, lay in layouts.items():
        where = f"kernel {kernel!r}: output_layout {name!r}"
        if name not in own:
            raise SpecError(f"{where}: not an output of op {op.name} with a buffer of its own",
                            fix=f"name one of {own} (an in-out or aliased output lies where its input does)")
        if not isinstance(lay, OutputLayout):
            raise SpecError(f"{where}: {lay!r} is not a layout",
                            fix="give RowStride(stride) or ColumnMajor(ld) (from verifier.spec)")
        ndim = len(op.dims_of(name))
        if ndim not in lay.ndims:
            raise SpecError(f"{where}: {type(lay).__name__} lays out {' or '.join(f'{d}-D' for d in lay.ndims)} "
                            f"outputs, {name!r} is {ndim}-D", fix="declare a layout of the output's shape")
    return dict(layouts)


def strides_of(spec, name: str, shape: tuple, M: int, N: int, params: dict, dt=None) -> Optional[tuple]:
    """The declared element strides of output ``name`` at this call, or None (laid out as the case says). A layout
    that cannot hold the output at a shape the kernel refuses (``dt`` given: the refusal step probes such shapes,
    rows of 1 for ids of k) is None there: the runner refuses the shape before anything runs."""
    lay = getattr(spec, "output_layout", {}).get(name)
    if lay is None:
        return None
    try:
        return lay.strides(spec, name, tuple(shape), M, N, params)
    except VerifierError:
        if dt is not None and spec.check_supported(M, N, dt) is not None:
            return None
        raise


def span(shape: tuple, strides: tuple) -> int:
    """Elements of the buffer a layout needs: whole rows (or columns) of its stride, padding included."""
    if not shape or 0 in shape:
        return 0
    return max(int(d) * int(s) for d, s in zip(shape, strides))


def where_in(shape: tuple, strides: tuple, offset: int) -> str:
    """Where buffer element ``offset`` (padding) lies: 'row r, slot c' of rows ``stride`` apart, or a column's."""
    outer = int(np.argmax(strides))
    major, minor = divmod(int(offset), int(strides[outer]))
    if len(shape) == 1:
        return f"element {minor} after index {major}"
    if outer == 0:
        return f"row {major}, column {minor} (past its row's {shape[1]} elements)"
    return f"column {major}, slot {minor} (past its column's {shape[0]} elements)"


def empty_like_declared(spec, name: str, shape: tuple, dtype, device, M: int, N: int, params: dict, fill=None):
    """A torch output at its declared layout (a view of a bigger buffer), or None where none is declared; ``fill``
    fills the whole buffer, padding included (verifier bench, Triton's compiled-resource capture)."""
    strides = strides_of(spec, name, shape, M, N, params)
    if strides is None:
        return None
    import torch

    buf = torch.empty(span(shape, strides), dtype=dtype, device=device)
    if fill is not None:
        buf.fill_(fill)
    return buf.as_strided(tuple(shape), strides)
