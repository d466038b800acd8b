"""``tl.reduce`` with a combine function of the kernel's own (a Welford merge, an argmax with tie-breaks) in the
Triton interpreter, as a pairwise tree over whole slices.

Triton 3.9's interpreter folds such a reduction element by element (``ReduceOps.generic_reduce``): one call of the
combine function per element, each a few numpy ops on scalars, so FlagGems' ``var_mean`` (a Welford merge over
BLOCK_M x BLOCK_N lanes, up to 16,384) took seconds per program and tens of minutes per check on the CPU. Here the
combine function runs on whole halves at once: elements 0, 2, 4, ... with 1, 3, 5, ... (left operand first, an odd
last element carried to the end), log2(n) calls in all. Triton requires the combine function to be associative
and compiled Triton reduces in a tree too, so the result is one of the orders a GPU may use. A combine function
that cannot run on blocks (Python control flow on its operands) raises, and the element fold runs instead."""
from __future__ import annotations


def install(interp) -> None:
    """Wrap ``interp.ReduceOps.generic_reduce`` (once: the caller wraps the interpreter once per process)."""
    ops = getattr(interp, "ReduceOps", None)
    if ops is None or not hasattr(ops, "generic_reduce") or not hasattr(ops, "unravel"):
        return
    fold = ops.generic_reduce

    def generic_reduce(self, input):
        try:
            return _tree(self, input)
        except Exception:  # a combine function that only runs on scalars: the interpreter's own fold
            return fold(self, input)

    ops.generic_reduce = generic_reduce


def _tree(self, input) -> list:
    import numpy as np
    import triton.language as tl

    original_axis = self.axis
    input, axis = self.unravel(input, self.axis)
    dtypes = [t.dtype for t in input]
    arrays = [np.moveaxis(np.asarray(t.handle.data), axis, 0) for t in input]
    while arrays[0].shape[0] > 1:
        n = arrays[0].shape[0]
        half = n // 2
        left = tuple(self.to_tensor(np.ascontiguousarray(a[0:2 * half:2]), dt) for a, dt in zip(arrays, dtypes))
        right = tuple(self.to_tensor(np.ascontiguousarray(a[1:2 * half:2]), dt) for a, dt in zip(arrays, dtypes))
        out = self.combine_fn.fn(*left, *right)
        out = out if isinstance(out, tuple) else (out,)
        if len(out) != len(arrays):
            raise ValueError("the combine function returned another number of values")
        merged = []
        for a, o in zip(arrays, out):
            data = o.handle.data if isinstance(o, tl.core.tensor) else getattr(o, "value", o)
            data = np.broadcast_to(np.asarray(data), (half,) + a.shape[1:]).astype(a.dtype)
            merged.append(np.concatenate([data, a[2 * half:]]) if n % 2 else data)
        arrays = merged
    ret = []
    for a, dt in zip(arrays, dtypes):
        data = a[0]
        if self.keep_dims:
            data = np.expand_dims(data, axis) if original_axis is not None else data.reshape((1,) * (a.ndim))
        elif original_axis is None:
            data = data.item()
        ret.append(self.to_tensor(data, dt))
    return ret
