"""Which programs of an interpreted Triton kernel's grid write which rows: established by running the kernel, never
assumed (the large cases on a CPU: verifier.launch.large runs only the programs owning the judged rows).

The interpreter runs a grid's programs one by one in Python, so a large case (131,136 rows) runs only the
programs that own its judged rows (verifier.launch.sparse_grid), and only where the kernel's grid follows a model
checked on the kernel itself:

- the large launch and one at PROBE_ROWS rows (no program run, the grid recorded) differ on exactly one grid axis,
  whose size is K·ceil(M / R) at both sizes: blocks of R rows, each written by K programs (K = 1 for a kernel
  owning R rows per program, R = 1 for one splitting each row into K programs), the other axes equal;
- at M_c = 2R + max(1, R // 2) rows (three blocks, the last one partial where R > 1) in ordinary memory, with the
  same row length, dtypes and params: the launch is the same kernel with the same constexpr arguments and the
  large launch's other grid axes; the whole grid runs (the baseline), then each block's K programs alone, which
  must write exactly the block's rows, bit for bit as the whole grid did, leave every other row holding its
  poison (an in-out tensor or an output written over an input: its input), and change no guard byte.

Anything else (a persistent kernel's grid-stride loop: a grid that does not grow with M; several launches; a block
that does not write its rows alone; an output without a row per input row) is not run on the CPU: :class:`NotSparse`
says why, and the battery notes the case as not run (a GPU runs every program), never a pass or a finding.
A case of at most ALL_ROWS rows on at most ALL_PROGRAMS programs runs its whole grid: nothing to establish.

The model is checked at M_c and assumed at the large M: a kernel that changes its row assignment with M beyond
its grid (an M-dependent branch between two ownership schemes) is outside what a small run can show.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verifier.launch import sparse_grid as _sg

ALL_ROWS, ALL_PROGRAMS = 16, 256  # a case of this few rows on a grid this small runs whole (row_stride_2pow31: 4 rows)
PROBE_ROWS = 5  # the second grid's rows (no program runs there): a grid of blocks of R > 5 rows has one
MAX_BLOCK_ELEMENTS = 1 << 22  # R·N of one block: past it the calibration and each owner cost too much here


class NotSparse(Exception):
    """The large case cannot run on part of the grid: ``reason`` says why (the case is not run)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Owners:
    """The programs owning the rows of one launch: along ``axis``, programs [bK, (b+1)K) write rows [bR, (b+1)R);
    ``whole``: every program runs (a small grid)."""

    launch: _sg.Launch
    axis: int = 0
    per_block: int = 1  # K
    rows: int = 1  # R
    whole: bool = False

    def programs(self, judged) -> list:
        if self.whole:
            return _sg.every_program(self.launch)
        g, a = self.launch.grid, self.axis
        along = sorted({p for r in judged for p in range(int(r) // self.rows * self.per_block,
                                                         (int(r) // self.rows + 1) * self.per_block) if p < g[a]})
        ranges = [range(n) for n in g]
        ranges[a] = along
        return [(x, y, z) for x in ranges[0] for y in ranges[1] for z in ranges[2]]

    def same_kernel(self, launch: _sg.Launch) -> bool:
        return (launch.fn, launch.constexprs) == (self.launch.fn, self.launch.constexprs)


def one(launches: list, where: str) -> _sg.Launch:
    if len(launches) != 1:
        raise NotSparse(f"its launcher made {len(launches)} Triton launches {where}; the CPU runs a large case on "
                        "part of the grid of a single launch")
    return launches[0]


def model(large: _sg.Launch, M: int, probe: _sg.Launch, m: int) -> Owners:
    """The grid model from the large launch (M rows) and the probe's (m rows): the axis that grows, K and R."""
    if not (large.fn == probe.fn):
        raise NotSparse(f"its launcher launches {large.kernel} at {M} rows and {probe.kernel} at {m}")
    grows = [a for a in range(3) if large.grid[a] != probe.grid[a]]
    if not grows:
        raise NotSparse(f"its grid {large.grid} is the same at {m} and {M} rows (a persistent kernel looping over "
                        "the rows?): which program writes a row cannot be told from the grid")
    if len(grows) > 1:
        raise NotSparse(f"its grid changes on more than one axis with the rows ({probe.grid} at {m} rows, "
                        f"{large.grid} at {M})")
    a = grows[0]
    gL, gm = large.grid[a], probe.grid[a]
    if gL % M == 0 and gm == gL // M * m:
        return Owners(large, a, gL // M, 1)
    R = -(-M // gL)
    if -(-M // R) == gL and -(-m // R) == gm:
        return Owners(large, a, 1, R)
    raise NotSparse(f"its grid's axis {'xyz'[a]} has {gm} programs at {m} rows and {gL} at {M}: not K·ceil(M / R) "
                    "for a block of R rows")


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def verify(owners: Owners, run_small, N: int, held: dict) -> None:
    """Run the model's check at M_c rows: ``run_small(m, select)`` runs the kernel on m rows in ordinary memory under
    the program selector and returns (Outcome, small inputs); ``held``: output -> the input its buffer starts as."""
    R, K, a = owners.rows, owners.per_block, owners.axis
    if R * N > MAX_BLOCK_ELEMENTS:
        raise NotSparse(f"each program block holds {R} rows of {N} ({R * N} elements): too slow to run in the "
                        "interpreter")
    mc = 2 * R + max(1, R // 2)
    seen: list = []

    def checked(launches):
        launch = one(launches, f"at {mc} rows")
        if not owners.same_kernel(launch):
            raise NotSparse(f"at {mc} rows its launcher launches {launch.kernel} with {dict(launch.constexprs)}, at "
                            f"the large case's rows {owners.launch.kernel} with {dict(owners.launch.constexprs)}")
        want = list(owners.launch.grid)
        want[a] = K * -(-mc // R)
        if list(launch.grid) != want:
            raise NotSparse(f"its grid at {mc} rows is {launch.grid}, not {tuple(want)} as its grid at the large "
                            "case's rows implies")

    base, small = run_small(mc, _sg.recording(seen, _sg.every_program))
    checked(seen)
    for name, hits in {**base.guard_hits, **base.gap_hits}.items():
        raise NotSparse(f"at {mc} rows it writes outside output {name!r} (its checks on ordinary cases say more)")
    for b in range(3):
        seen = []
        def pick(launch, b=b):
            g = list(launch.grid)
            ranges = [range(n) for n in g]
            ranges[a] = range(b * K, min((b + 1) * K, g[a]))
            return [(x, y, z) for x in ranges[0] for y in ranges[1] for z in ranges[2]]

        got, _ = run_small(mc, _sg.recording(seen, pick))
        checked(seen)
        lo, hi = b * R, min((b + 1) * R, mc)
        what = f"at {mc} rows, programs {b * K}..{(b + 1) * K - 1} on grid axis {'xyz'[a]} alone"
        if got.guard_hits or got.gap_hits:
            raise NotSparse(f"{what} write outside their output")
        for name, full in base.outputs.items():
            mine = got.outputs[name]
            others = np.ones(mc, dtype=bool)
            others[lo:hi] = False
            if held.get(name):
                start = _bits(np.asarray(small[held[name]]).astype(mine.dtype, copy=False))
                kept = np.all((_bits(mine) == start).reshape(mc, -1), axis=1)
            else:
                mask = got.unwritten.get(name)
                kept = np.zeros(mc, dtype=bool) if mask is None else np.all(np.asarray(mask).reshape(mc, -1), axis=1)
            if not kept[others].all():
                r = int(np.flatnonzero(others & ~kept)[0])
                raise NotSparse(f"{what} write row {r} of {name!r} too, outside rows {lo}..{hi - 1}")
            if not np.array_equal(_bits(mine[lo:hi]), _bits(full[lo:hi])):
                raise NotSparse(f"{what} do not leave rows {lo}..{hi - 1} of {name!r} as the whole grid does "
                                "(other programs write them, or their values depend on other programs)")
