"""The launcher's own torch work on a large case's tensors, refused before it runs (the large cases on a CPU).

On a CPU the interpreter runs only the programs owning the judged rows (verifier.launch.row_owners), but torch
work a launcher does itself around the launch (the library's result copied into the output, a float32 copy of x,
an output zeroed) runs on every one of the M·N > 2^31 elements on the host: seconds to minutes per case, and a
copy held in host memory (gigabytes). Inside :func:`refusing_heavy_work` a torch function (torch's function mode:
the dispatcher's mode would import torch._dynamo, seconds per process) given a tensor of BIG elements or more, or
asked to fill a new one, raises NotSparse before it runs: the case is not run on the CPU, with the function named.
Views and metadata (view, select, stride, empty_like: memory not touched) pass; so does the interpreter's own
handling of the tensors inside a launch (verifier.launch.sparse_grid.in_grid).
"""
from __future__ import annotations

import contextlib

import numpy as np

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


@contextlib.contextmanager
def refusing_heavy_work():
    """Inside: a torch function over BIG elements or more raises NotSparse (outside the interpreter's grid runs)."""
    from torch.overrides import TorchFunctionMode

    from verifier.launch import sparse_grid
    from verifier.launch.row_owners import NotSparse

    class _Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if not sparse_grid.in_grid() and name != "__get__" and name not in _UNTOUCHED:
                most = max([t.numel() for t in _tensors((args, kwargs))] + [_size_arg(args)])
                if most >= BIG:
                    what = getattr(func, "__qualname__", name) or repr(func)
                    raise NotSparse(f"its launcher runs torch's {what} over {most} elements on the host (the "
                                    "interpreter runs only the judged rows' programs, torch every element: minutes "
                                    "and gigabytes here)")
            return func(*args, **kwargs)

    with _Watch():
        yield
