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


_ALLOCATE = {"empty", "empty_like", "new_empty"}  # memory not touched: laid out as the case's outputs (RowWork)


class RowWork:
    """The judged rows of a large case of M rows, and ``output(shape, torch dtype)``: an (M, C) tensor laid out as
    the case's outputs are (verifier.launch.large_host._HostMapped.library_output)."""

    def __init__(self, M: int, judged, output):
        self.M, self.judged, self.output = M, [int(r) for r in judged], output

    def _rows(self, t):
        """``t`` as (M, C) (leading dims of 1 dropped), or None where it has no row per case row."""
        while t.dim() > 2 and t.shape[0] == 1:
            t = t.squeeze(0)
        return t if t.dim() == 2 and t.shape[0] == self.M else None

    def allocate(self, name: str, args, kwargs):
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
        dims = [int(d) for d in shape]
        if int(np.prod(dims, dtype=np.float64)) < BIG or dtype not in _TORCH_NAMES:
            return None
        while len(dims) > 2 and dims[0] == 1:
            dims = dims[1:]
        if len(dims) != 2 or dims[0] != self.M:
            return None
        return self.output(tuple(dims), dtype).view(tuple(int(d) for d in shape))

    def copy(self, dst, src) -> bool:
        """dst's judged rows from src's (same shape, M rows); False where that is not such a copy."""
        import torch

        if not (isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor)) or dst.shape != src.shape:
            return False
        d, s = self._rows(dst), self._rows(src)
        if d is None or s is None:
            return False
        for r in self.judged:
            d[r].copy_(s[r])
        return True


_TORCH_NAMES: dict = {}  # torch dtype -> our name, filled by refusing_heavy_work


def _row_work(rows: "RowWork", name: str, args, kwargs):
    """What ``rows`` does for a torch function instead of running it over every element, or None."""
    import torch

    if name in _ALLOCATE:
        return rows.allocate(name, args, kwargs)
    if name == "copy_" and len(args) >= 2 and not kwargs.get("non_blocking"):
        return args[0] if rows.copy(args[0], args[1]) else None
    if name == "clone" and args and isinstance(args[0], torch.Tensor):
        t = rows.allocate("empty_like", (args[0],), {})
        return t if t is not None and rows.copy(t, args[0]) else None
    if name == "__setitem__" and len(args) == 3 and (args[1] is Ellipsis or args[1] == slice(None)):
        return args[0] if rows.copy(args[0], args[2]) else None
    return None


@contextlib.contextmanager
def poisoned_allocations(m: int):
    """Inside: an ``empty`` / ``empty_like`` / ``new_empty`` of ``m`` rows (a library's own result, RowWork) holds
    the first poison of its dtype, as the harness's outputs do: the small runs that establish which programs own
    which rows (verifier.launch.large_host) then see its rows no program wrote as unwritten, not as garbage."""
    from torch.overrides import TorchFunctionMode

    from verifier import dtypes as _dt
    from verifier.launch.outcome import INT_VIEW, POISON

    class _Poison(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            import torch

            out = func(*args, **(kwargs or {}))
            if getattr(func, "__name__", "") in _ALLOCATE and isinstance(out, torch.Tensor) and out.dim() >= 2:
                rows = out
                while rows.dim() > 2 and rows.shape[0] == 1:
                    rows = rows.squeeze(0)
                name = _dt.canonical(out.dtype) if out.dtype in (torch.float32, torch.float16, torch.bfloat16,
                                                                  torch.float8_e4m3fn, torch.float8_e5m2,
                                                                  torch.int8, torch.int32, torch.int64) else None
                if rows.dim() == 2 and rows.shape[0] == m and name in POISON:
                    out.view(getattr(torch, INT_VIEW[out.element_size()])).fill_(
                        int(np.array(POISON[name][0]).astype(INT_VIEW[out.element_size()])))
            return out

    with _Poison():
        yield


@contextlib.contextmanager
def refusing_heavy_work(rows: "RowWork | None" = None):
    """Inside: a torch function over BIG elements or more raises NotSparse (outside the interpreter's grid runs);
    given ``rows``, a library's result allocated and copied into the outputs row by row instead (module doc)."""
    from torch.overrides import TorchFunctionMode

    from verifier import dtypes as _dt
    from verifier.launch import sparse_grid
    from verifier.launch.outcome import POISON
    from verifier.launch.row_owners import NotSparse

    if not _TORCH_NAMES:
        _TORCH_NAMES.update({_dt.torch_dtype(n): n for n in POISON})

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

    with _Watch():
        yield
