"""The launcher's own torch work on a large case's tensors, refused before it runs (the large cases on a CPU).

On a CPU the interpreter runs only the programs owning the judged rows (verifier.launch.row_owners), but torch
work a launcher does itself around the launch (the library's result copied into the output, a float32 copy of x,
an output zeroed) runs on every one of the M·N > 2^31 elements on the host: seconds to minutes per case, and a
copy held in host memory (gigabytes). Inside :func:`refusing_heavy_work` a torch function (torch's function mode:
the dispatcher's mode would import torch._dynamo, seconds per process) given a tensor of BIG elements or more, or
asked to fill a new one, raises NotSparse before it runs: the case is not run on the CPU, with the function named.
Views and metadata (view, select, stride, empty_like: memory not touched) pass; so does the interpreter's own
handling of the tensors inside a launch (verifier.launch.sparse_grid.in_grid).

A library's own launcher allocates its result and returns it, and the spec's launcher copies it into the output
(``outputs["y"].copy_(lib.softmax(x))``): given ``rows`` (a :class:`RowWork`), an ``empty`` / ``empty_like`` /
``new_empty`` of the case's M rows (leading dims of 1 aside: FBGEMM's (1, 1, M, K)) is laid out as the case's
outputs are (aliased, the judged rows private and poisoned, a wrapped 32-bit offset landing in an apron), and a
``copy_``, ``clone`` or whole ``[...] =`` between tensors of M rows copies the judged rows only: the other rows'
programs never ran, and only the judged rows are judged.
"""
from __future__ import annotations

import contextlib
from typing import Optional

import numpy as np

from verifier.launch.outcome import INT_VIEW

BIG = 1 << 24  # elements: no small case comes near, every large tensor (65,600 rows of 1024 and up) is past it
# torch functions that describe, view or allocate memory without touching its elements (attribute reads, __get__,
# pass too); contiguous / reshape copy only a tensor that is not contiguous (a large case's are, but for their
# rows 2^31 apart: four rows)
_UNTOUCHED = {"view", "view_as", "reshape", "reshape_as", "__getitem__", "select", "narrow", "unsqueeze", "squeeze",
              "flatten", "unflatten", "t", "transpose", "permute", "expand", "expand_as", "as_strided", "contiguous",
              "detach", "stride", "size", "dim", "numel", "nelement", "element_size", "data_ptr", "is_contiguous",
              "storage_offset", "untyped_storage", "empty", "empty_like", "empty_strided", "new_empty",
              "new_empty_strided", "__len__", "__format__", "__repr__", "__hash__", "get_device", "is_floating_point",
              "is_complex", "dim_order", "unbind", "split", "chunk", "movedim"}


def _tensors(v):
    import torch

    if isinstance(v, torch.Tensor):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _tensors(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _tensors(x)


def _size_arg(args) -> int:
    """Elements a factory function asked for (a size list or sizes as its first arguments), else 0."""
    dims = args[0] if args and isinstance(args[0], (list, tuple)) else args
    if dims and all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        return int(np.prod([int(d) for d in dims], dtype=np.float64))
    return 0


_ALLOCATE = {"empty", "empty_like", "new_empty"}  # memory not touched: laid out as the case's outputs (RowWork)
_POISONED: dict = {}  # storage address of a library's allocation -> (int dtype, poison bits) while it is watched


def _poison_of(t) -> Optional[tuple]:
    """(int view dtype, poison bits) of a poisoned library allocation ``t`` is a view of, else None."""
    return _POISONED.get(t.untyped_storage().data_ptr())


def _poison(t, bits: int) -> None:
    """Remember ``t`` (a library allocation holding ``bits`` where nothing wrote) for _masked_copy."""
    import torch

    _POISONED[t.untyped_storage().data_ptr()] = (getattr(torch, INT_VIEW[t.element_size()]), int(bits))


def _masked_copy(dst, src) -> None:
    """dst = src where src was written: elements of a poisoned library allocation still holding its poison leave
    dst as it was (an output's poison, an in-out tensor's input), as if the library had written it in place."""
    import torch

    ints, bits = _poison_of(src)
    dst.copy_(torch.where(src.view(ints) == bits, dst, src.to(dst.dtype)))


def _rows_of(t, M: int):
    """``t`` as (M, C) (leading dims of 1 dropped), or None where it has no row per case row."""
    while t.dim() > 2 and t.shape[0] == 1:
        t = t.squeeze(0)
    return t if t.dim() == 2 and t.shape[0] == M else None


def _allocation(name: str, args, kwargs) -> Optional[tuple]:
    """(shape, torch dtype) an empty / empty_like / new_empty call on the CPU asks for, else None."""
    import torch

    if name == "empty":
        shape = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
        dtype = kwargs.get("dtype") or torch.get_default_dtype()
    elif name == "empty_like" and args and isinstance(args[0], torch.Tensor):
        shape, dtype = args[0].shape, kwargs.get("dtype") or args[0].dtype
    elif name == "new_empty" and len(args) >= 2 and isinstance(args[0], torch.Tensor):
        shape = args[1] if isinstance(args[1], (list, tuple)) else args[1:]
        dtype = kwargs.get("dtype") or args[0].dtype
    else:
        return None
    if kwargs.get("device") not in (None, "cpu", torch.device("cpu")) or kwargs.get("out") is not None:
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        return None
    return tuple(int(d) for d in shape), dtype


def _copy_pair(name: str, args):
    """(dst, src) of a copy_ or a whole ``[...] =`` / ``[:] =``, else None."""
    import torch

    if name == "copy_" and len(args) >= 2:
        pair = args[0], args[1]
    elif name == "__setitem__" and len(args) == 3 and (args[1] is Ellipsis or args[1] == slice(None)):
        pair = args[0], args[2]
    else:
        return None
    ok = all(isinstance(t, torch.Tensor) for t in pair) and pair[0].shape == pair[1].shape
    return pair if ok else None


class RowWork:
    """The judged rows of a large case of M rows, and ``output(shape, torch dtype)``: an (M, C) tensor laid out as
    the case's outputs are, poisoned (verifier.launch.large_host._HostMapped.library_output)."""

    def __init__(self, M: int, judged, output):
        self.M, self.judged, self.output = M, [int(r) for r in judged], output

    def allocate(self, name: str, args, kwargs):
        asked = _allocation(name, args, kwargs)
        if asked is None:
            return None
        shape, dtype = asked
        dims = list(shape)
        if int(np.prod(dims, dtype=np.float64)) < BIG:
            return None
        while len(dims) > 2 and dims[0] == 1:
            dims = dims[1:]
        if len(dims) != 2 or dims[0] != self.M:
            return None
        made = self.output(tuple(dims), dtype)
        if made is None:
            return None
        view, bits = made
        _poison(view, bits)
        return view.view(shape)

    def copy(self, dst, src) -> bool:
        """dst's judged rows from src's (a poisoned library allocation: where it was written); False where that is
        not such a copy."""
        if _poison_of(src) is None:
            return False
        d, s = _rows_of(dst, self.M), _rows_of(src, self.M)
        if d is None or s is None:
            return False
        for r in self.judged:
            _masked_copy(d[r], s[r])
        return True


def _row_work(rows: "RowWork", name: str, args, kwargs):
    """What ``rows`` does for a torch function instead of running it over every element, or None."""
    import torch

    if name in _ALLOCATE:
        return rows.allocate(name, args, kwargs)
    pair = _copy_pair(name, args)
    if pair is not None and not kwargs.get("non_blocking"):
        return args[0] if rows.copy(*pair) else None
    if name == "clone" and args and isinstance(args[0], torch.Tensor) and _poison_of(args[0]) is not None:
        t = rows.allocate("empty_like", (args[0],), {})
        return t if t is not None and rows.copy(t, args[0]) else None
    return None


@contextlib.contextmanager
def poisoned_allocations(m: int):
    """Inside: an ``empty`` / ``empty_like`` / ``new_empty`` of ``m`` rows (a library's own result) holds the first
    poison of its dtype, and a copy out of it takes only what was written (_masked_copy), as RowWork does in the
    large case: the small runs that establish which programs own which rows (verifier.launch.large_host) then see
    rows no program wrote as their poison, or an in-out tensor's input, not as garbage."""
    import torch
    from torch.overrides import TorchFunctionMode

    from verifier.launch.outcome import POISON

    class _Poison(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            pair = _copy_pair(name, args)
            if pair is not None and _poison_of(pair[1]) is not None:
                _masked_copy(*pair)
                return None if name == "__setitem__" else pair[0]
            out = func(*args, **kwargs)
            if name in _ALLOCATE and isinstance(out, torch.Tensor) and out.dim() >= 2 \
                    and _rows_of(out, m) is not None and out.dtype in _TORCH_NAMES:
                ints = INT_VIEW[out.element_size()]
                bits = int(np.array(POISON[_TORCH_NAMES[out.dtype]][0]).astype(ints))
                out.view(getattr(torch, ints)).fill_(bits)
                _poison(out, bits)
            return out

    _torch_names()
    try:
        with _Poison():
            yield
    finally:
        _POISONED.clear()


_TORCH_NAMES: dict = {}  # torch dtype -> our name (the dtypes POISON has)


def _torch_names() -> None:
    from verifier import dtypes as _dt
    from verifier.launch.outcome import POISON

    if not _TORCH_NAMES:
        _TORCH_NAMES.update({_dt.torch_dtype(n): n for n in POISON})


def poisoned_name(torch_dtype):
    """Our name of a torch dtype that has an output poison (verifier.launch.outcome.POISON), or None."""
    _torch_names()
    return _TORCH_NAMES.get(torch_dtype)


@contextlib.contextmanager
def refusing_heavy_work(rows: "RowWork | None" = None):
    """Inside: a torch function over BIG elements or more raises NotSparse (outside the interpreter's grid runs);
    given ``rows``, a library's result allocated and copied into the outputs row by row instead (module doc)."""
    from torch.overrides import TorchFunctionMode

    from verifier.launch import sparse_grid
    from verifier.launch.row_owners import NotSparse

    _torch_names()

    class _Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if rows is not None and not sparse_grid.in_grid():
                done = _row_work(rows, name, args, kwargs)
                if done is not None:
                    return None if name == "__setitem__" else done
            if not sparse_grid.in_grid() and name != "__get__" and name not in _UNTOUCHED:
                most = max([t.numel() for t in _tensors((args, kwargs))] + [_size_arg(args)])
                if most >= BIG:
                    what = getattr(func, "__qualname__", name) or repr(func)
                    raise NotSparse(f"its launcher runs torch's {what} over {most} elements on the host (the "
                                    "interpreter runs only the judged rows' programs, torch every element: minutes "
                                    "and gigabytes here)")
            return func(*args, **kwargs)

    try:
        with _Watch():
            yield
    finally:
        _POISONED.clear()
