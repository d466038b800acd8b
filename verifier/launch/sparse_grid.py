"""A chosen few programs of an interpreted Triton launch's grid (the large cases on a CPU, verifier.launch.row_owners).

The Triton interpreter runs every program of a grid one after another in Python: 131,136 programs of 16384
elements for ``large_index_2pow31`` would take hours. Inside :func:`programs`, each interpreted launch asks a
selector which programs to run, given the :class:`Launch` (kernel, grid, constexpr arguments), and runs only those,
each with ``tl.program_id`` and ``tl.num_programs`` as in the whole grid. The rest of Triton's launch is its own:
the grid run (GridExecutor.__call__) is given a one-axis grid of as many programs as were chosen, and the builder's
``set_grid_dim`` / ``set_grid_idx`` put the whole grid and each chosen program in their place.

A grid past CUDA's limits (x below 2^31, y and z at most 65,535) is refused here as compiled Triton's launch refuses
it (CUDA_ERROR_INVALID_VALUE): the interpreter has no such limit, and a kernel launching one program per row on
grid axis 1 would otherwise pass ``rows_past_65535`` on a CPU and fail on every GPU.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable, Optional

CUDA_GRID_MAX = (2 ** 31 - 1, 65535, 65535)


@dataclass(frozen=True)
class Launch:
    """One interpreted launch as the selector sees it."""

    kernel: str  # the kernel function's module and name
    fn: int  # id() of the interpreted function (Triton caches it: the same kernel, the same id)
    grid: tuple  # (x, y, z)
    constexprs: tuple  # ((name, repr(value)), ...) of its constexpr arguments, sorted

    @property
    def programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


class GridLimit(RuntimeError):
    """A grid compiled Triton's launch refuses (what CUDA's cuLaunchKernel answers: invalid argument). Raised before
    anything runs: a crash of the kernel (verifier.declare.usercode.classify), not a CUDA fault that ends the
    battery (verifier.launch.outcome.is_cuda_fault), as a refused cuLaunchKernel leaves a GPU's context usable."""

    launch_refused = True


def grid_limit_error(grid) -> Optional[str]:
    for axis, (n, most) in enumerate(zip(grid, CUDA_GRID_MAX)):
        if n > most:
            return (f"grid {tuple(grid)} exceeds CUDA's limit on axis {'xyz'[axis]} ({most}): compiled Triton's "
                    f"launch fails there (CUDA_ERROR_INVALID_VALUE, 'invalid argument'); launch rows on grid axis x "
                    f"(or loop over them in each program)")
    return None


_select: Optional[Callable] = None  # the selector of the programs() block in force
_installed = False
_depth = 0  # grid runs in progress under a selector


def in_grid() -> bool:
    """Whether a grid run chosen by programs() is in progress (the interpreter's own handling of the tensors)."""
    return _depth > 0


def _install() -> None:
    """Wrap the interpreter's grid run once (over whatever wraps it already, verifier.launch.interpreter's)."""
    global _installed
    if _installed:
        return
    import triton.runtime.interpreter as interp

    builder = getattr(interp, "interpreter_builder", None)
    grid_cls = getattr(interp, "GridExecutor", None)
    if builder is None or grid_cls is None or not all(hasattr(builder, a) for a in ("set_grid_dim", "set_grid_idx")):
        raise RuntimeError("this Triton's interpreter has no GridExecutor / interpreter_builder.set_grid_idx: its "
                           "grid cannot be run in part")
    whole = grid_cls.__call__

    def call(self, *args, **kwargs):
        select = _select
        if select is None or not hasattr(self, "grid"):
            return whole(self, *args, **kwargs)
        given, chosen = self.grid, {}
        name = f"{getattr(self.fn, '__module__', '?')}.{getattr(self.fn, '__qualname__', '?')}"

        def grid(meta):
            g = given(meta) if callable(given) else given
            g = tuple(int(v) for v in g) + (1,) * (3 - len(tuple(g)))
            refused = grid_limit_error(g)
            if refused:
                raise GridLimit(refused)
            consts = tuple(sorted((k, repr(meta[k])) for k in getattr(self, "constexprs", ()) if k in meta))
            picked = [tuple(int(i) for i in p) for p in select(Launch(name, id(self.fn), g, consts))]
            for p in picked:
                if not all(0 <= i < n for i, n in zip(p, g)):
                    raise ValueError(f"program {p} lies outside grid {g}")
            chosen.update(grid=g, programs=picked)
            return (len(picked), 1, 1)

        cls = type(builder)
        builder.set_grid_dim = lambda nx, ny, nz: cls.set_grid_dim(builder, *chosen["grid"])
        builder.set_grid_idx = lambda i, y, z: cls.set_grid_idx(builder, *chosen["programs"][i])
        global _depth
        self.grid = grid
        _depth += 1
        try:
            return whole(self, *args, **kwargs)
        finally:
            _depth -= 1
            self.grid = given
            del builder.set_grid_dim, builder.set_grid_idx

    grid_cls.__call__ = call
    _installed = True


@contextlib.contextmanager
def programs(select: Callable):
    """Inside the block every interpreted launch runs only the programs ``select(launch)`` returns ((x, y, z)
    tuples, in that order; none: nothing runs) and refuses a grid past CUDA's limits (GridLimit)."""
    global _select
    _install()
    before, _select = _select, select
    try:
        yield
    finally:
        _select = before


def recording(into: list, pick: Optional[Callable] = None):
    """A selector that appends each Launch to ``into`` and runs ``pick(launch)``'s programs (default: none)."""
    def select(launch: Launch):
        into.append(launch)
        return pick(launch) if pick is not None else []
    return select


def every_program(launch: Launch) -> list:
    gx, gy, gz = launch.grid
    return [(x, y, z) for x in range(gx) for y in range(gy) for z in range(gz)]
