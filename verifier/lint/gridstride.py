"""Grid-stride loops that the launches run at most once per block: ``for (row = blockIdx.x; row < M; row +=
gridDim.x)`` launched with a grid of at least M blocks.

The checks follow a loop's back edge whatever the launch, so rows of a grid-stride loop that reuse shared memory
with no barrier at a row's end read as a race of one row's access against the next row's. That race needs a block
to run two rows. nvcc rotates such a loop: its latch ends with ``@p bra header``, ``p`` the test of the counter's
next value against the bound (``row + gridDim.x < M``). Where the counter only starts (at blockIdx, >= 0) or grows
by non-negative steps, its next value is at least its smallest start plus the step; where that passes the bound in
every launch of the entry at a block shape (the probe shapes' and the large shapes', their grids and argument
values through verifier.lint.ranges), no thread takes the back edge there: that shape is analysed with the branch
decided not taken (verifier.lint.cfg), as the program runs there. Where a launch lets a block run two rows (rows
past a grid capped at 65535, a persistent grid), the full analysis stays, and what is found only across rows names
that launch. A loop whose counter, step or bound the launches' values do not give keeps the full analysis.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from verifier.lint.cfg import EXIT
from verifier.lint.issues import PROBE
from verifier.lint.ranges import Bounds, Counters, param_slot

_STRICT = {"lt": False, "lo": False, "le": True, "ls": True}  # continue while counter < bound (or <=)
_FLIPPED = {"gt": "lt", "hi": "lo", "ge": "le", "hs": "ls"}  # bound > counter: counter < bound
_NEGATED = {"ge": "lt", "hs": "lo", "gt": "le", "hi": "ls", "lt": "ge", "lo": "hs", "le": "gt", "ls": "hi"}


@dataclass(frozen=True)
class GridLoop:
    branch: int  # the latch's `@p bra header`: its taken edge is the back edge
    reg: str  # the counter's register
    step: int  # node of the step this latch's test adds
    bound: int  # node of the bound
    inclusive: bool  # counter <= bound (else <)
    bits: int  # the comparison's width
    signed: bool


def grid_loops(values) -> list:
    """The latches of an entry that test a grid-stride counter's next value against a bound (once per entry)."""
    if getattr(values, "grid_loops", None) is not None:
        return values.grid_loops
    cfg, nodes, counters = values.cfg, values.nodes, _counters(values)
    order = {b: k for k, b in enumerate(values._rpo())}
    out = []
    for blk in cfg.blocks:
        last = values.fn.instrs[blk.end - 1]
        if blk.id not in cfg.reachable or last.base != "bra" or last.pred is None or len(blk.succs) != 2:
            continue
        taken = [s for s, e in blk.succs if e == "taken"]
        if not taken or taken[0] == EXIT or order.get(taken[0], 1 << 30) > order.get(blk.id, -1):
            continue  # not a back edge
        test = _continue_test(nodes, values.pred_value(last))
        if test is None:
            continue
        nxt, bound, inclusive, bits, signed = test
        got = _next_of(nodes, nxt)
        if got is None:
            continue
        reg, step = got
        fam = counters.family(reg)
        if fam is None or not any(_mentions(nodes, i, "ctaid") for i in fam[0]) or not _mentions(nodes, step, "nctaid"):
            continue  # not a counter from the block index stepping by the grid
        out.append(GridLoop(last.idx, reg, step, bound, inclusive, bits, signed))
    values.grid_loops = out
    return out


def _counters(values) -> Counters:
    """The entry's loop counters, once per entry (their comparisons are read once)."""
    if getattr(values, "grid_counters", None) is None:
        values.grid_counters = Counters(values)
    return values.grid_counters


def _continue_test(nodes, p) -> Optional[tuple]:
    """(counter side, bound, inclusive, bits, signed) of a predicate that holds while ``counter < bound`` (or
    ``<=``), else None."""
    neg = False
    while p is not None and nodes[p][0] == "op" and nodes[p][1] == "not.pred":
        neg, p = not neg, nodes[p][2][0]
    if p is None or nodes[p][0] != "op" or not nodes[p][1].startswith("setp.") or len(nodes[p][2]) != 2:
        return None
    parts = nodes[p][1].split(".")
    cmp, typ = parts[1], parts[-1]
    if neg:
        cmp = _NEGATED.get(cmp, "")
    a, b = nodes[p][2]
    if cmp in _FLIPPED:
        cmp, a, b = _FLIPPED[cmp], b, a
    if cmp not in _STRICT or typ[0] not in "usb" or not typ[1:].isdigit():
        return None
    return a, b, _STRICT[cmp], int(typ[1:]), typ[0] == "s"


def _next_of(nodes, nid) -> Optional[tuple]:
    """(register, step) of ``R + step`` where R is a phi of register R (through trunc32u)."""
    n = nodes[nid]
    if n[0] == "op" and n[1] == "trunc32u":
        n = nodes[n[2][0]]
    if n[0] != "op" or n[1] != "add":
        return None
    for q, step in (n[2], n[2][::-1]):
        if nodes[q][0] == "phi":
            return nodes[q][1], step
    return None


def _mentions(nodes, nid: int, kind: str, depth: int = 0) -> bool:
    n = nodes[nid]
    if n[0] == kind:
        return True
    if n[0] == "op" and depth < 6:
        return any(_mentions(nodes, a, kind, depth + 1) for a in n[2])
    return False


def never_taken(values, loop: GridLoop, launch) -> tuple:
    """(True, '') where no thread takes the loop's back edge at this launch; (False, why) where a block may (the
    bound passes the step, or the next value wraps past the comparison's range: the loop runs again); (None, '')
    where the launch's values do not tell."""
    params = {name: k for k, name in enumerate(values.fn.params)}
    counters = _counters(values)
    b = Bounds(values, params, counters, launch)
    fam = counters.family(loop.reg)
    inits = [b.of(n) for n in fam[0]]
    steps = [b.of(n) for n in fam[1]]
    step, bound = b.of(loop.step), b.of(loop.bound)
    if any(iv is None for iv in inits + steps) or step is None or bound is None:
        return None, ""
    if any(iv[0] < 0 for iv in steps) or bound[0] < 0:
        return None, ""  # a counter that may shrink, a bound an unsigned test reads as huge
    reach = b.counter(loop.reg)
    if reach is None:
        return None, ""
    top = 1 << (loop.bits - 1 if loop.signed else loop.bits)
    if reach[1] + step[1] >= top:
        return False, (f"the counter's next value (up to {reach[1] + step[1]:,}) passes {top - 1:,} and wraps, "
                       f"so the loop runs again")
    if min(iv[0] for iv in inits) + step[0] >= bound[1] + loop.inclusive:
        return True, ""
    return False, f"{{bound}} ({bound[1]:,}) passes the step ({step[0]:,})"


def decide(values, facts, block: tuple) -> tuple:
    """({branch: a launch} of the latches no launch at this block shape takes, {branch: (the launch, why)} of those
    where some launch lets a block take it); a loop some launch's values do not decide is in neither."""
    launches = facts.launches_at(block)
    once, twice = {}, {}
    if not launches:
        return once, twice
    for loop in grid_loops(values):
        verdicts = [(*never_taken(values, loop, ll), ll) for ll in launches]
        if any(v is None for v, _, _ in verdicts):
            continue
        again = [(ll, why) for v, why, ll in verdicts if not v]
        if again:
            twice[loop.branch] = min(again, key=lambda x: first_shown(x[0]))
        else:
            once[loop.branch] = launches[0]
    return once, twice


def first_shown(ll) -> tuple:
    """The launch a message names: a probe shape's before a large one's, fewest rows first."""
    return ll.case != PROBE, ll.M, ll.N


def across_rows(values, loop_branch: int, launch, why: str, labels=()) -> str:
    """What a message adds to a hazard found only across two iterations of the loop at this latch."""
    loop = next(lp for lp in grid_loops(values) if lp.branch == loop_branch)
    params = {name: k for k, name in enumerate(values.fn.params)}
    node = values.nodes[loop.bound]
    name = "its bound"
    if node[0] == "ld" and node[1] == "param":
        k, off = param_slot(values.nodes, params, node)
        shown = launch.labels or labels
        if k is not None and k < len(shown) and not off:
            name = f"its bound {shown[k]}"
    where = f"the probe shape {launch.M}x{launch.N}" if launch.case == PROBE else \
        f"{launch.case} ({launch.M}x{launch.N})"
    grid = "x".join(map(str, launch.grid))
    return (f"; only across two iterations of a grid-stride loop, which one block runs at {where} (grid {grid}): "
            f"{why.format(bound=name)} (fix: the missing barrier at the end of each iteration; where every launch's "
            f"grid covers the loop's rows, each block runs it once and this is no hazard)")
