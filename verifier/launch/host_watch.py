"""The launcher's own torch work on a large case's tensors, refused before it runs (the large cases on a CPU).

On a CPU the interpreter runs only the programs owning the judged rows (verifier.launch.row_owners), but torch
work a launcher does itself around the launch (the library's result copied into the output, a float32 copy of x,
an output zeroed) runs on every one of the M·N > 2^31 elements on the host: seconds to minutes per case, and a
copy held in host memory (gigabytes). Inside :func:`refusing_heavy_work` a torch op (seen at the dispatcher) that
reads or writes a tensor of BIG elements or more, or fills a new one, raises NotSparse before it runs: the case is
not run on the CPU, with the op named. Views and metadata (view, reshape of a contiguous tensor, select, stride,
empty_like: memory not touched) pass; so does the interpreter's own handling of the tensors inside a launch
(verifier.launch.sparse_grid.in_grid).
"""
from __future__ import annotations

import contextlib

import numpy as np

BIG = 1 << 24  # elements: no small case comes near, every large tensor (65,600 rows of 1024 and up) is past it
_UNTOUCHED = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "set_", "detach", "alias",
              "_local_scalar_dense", "lift_fresh"}  # allocate or describe memory without touching it


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
    """Elements a factory op asked for (its first argument, a size list), else 0."""
    if args and isinstance(args[0], (list, tuple)) and args[0] and all(isinstance(d, int) for d in args[0]):
        return int(np.prod([int(d) for d in args[0]], dtype=np.float64))
    return 0


@contextlib.contextmanager
def refusing_heavy_work():
    from torch.utils._python_dispatch import TorchDispatchMode

    from verifier.launch import sparse_grid
    from verifier.launch.row_owners import NotSparse

    class _Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func._schema.name.split("::")[-1]
            if not sparse_grid.in_grid() and not getattr(func, "is_view", False) and name not in _UNTOUCHED:
                sizes = [t.numel() for t in _tensors((args, kwargs))] + [_size_arg(args)]
                if max(sizes) >= BIG:
                    raise NotSparse(f"its launcher runs torch's {func} over {max(sizes)} elements on the host (the "
                                    "interpreter runs only the judged rows' programs, torch runs every element: "
                                    "minutes and gigabytes here)")
            return func(*args, **kwargs)

    with _Watch():
        yield
