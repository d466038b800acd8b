"""Barrier-stepped loops analysed one step at a time: a loop every iteration of which passes a block barrier,
whose counters start from values known for the block shape and step by known amounts
(``for (offset = blockDim.y / 2; offset > 0; offset /= 2) { ...; __syncthreads(); ...; __syncthreads(); }``).

With a constant bound nvcc unrolls such a loop and every step is straight-line code the checks evaluate per
thread. With a run-time bound (blockDim) the loop stays, and its counter is one value node that no evaluation
can give: guards such as ``threadIdx.y >= offset && threadIdx.y < 2 * offset`` would be dropped (every thread
taken to run the store) and a correct pairwise merge would read as a race. The launches give the block shape,
so the counters' sequence is known: the loop is run symbolically (initial values evaluated, each step's next
values evaluated from the last, until its header or latch branch leaves), and the hazard check runs once per
step with the loop's counters bound to that step's values (``Semantics(bind=...)``). Two accesses one interval
holds in one iteration are compared with one step's values; an interval that crosses the loop's header (no
barrier between the end of one iteration and the start of the next) holds the later access with the next
step's values, or the first step's where the earlier access lies outside the loop (entered afresh, as each
row of a grid-stride loop around it does). A loop whose counters cannot be followed (data-dependent, a guarded
update, more than ``MAX_STEPS`` steps) keeps the unbound analysis: more threads and "cannot decide", never fewer.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from verifier.lint.cfg import EXIT

MAX_STEPS = 64
MAX_COMBINATIONS = 256  # several stepped loops in one entry: every combination of their steps


@dataclass
class Loop:
    header: int  # block id
    body: set  # block ids
    latches: list  # blocks with an edge back to the header
    carried: dict = field(default_factory=dict)  # register -> (outside def sites, inside def site)
    phis: dict = field(default_factory=dict)  # phi node -> register (its uses inside the body)


def loops_of(values) -> list:
    """Natural loops whose every cycle passes a block barrier and whose carried registers have one unguarded
    definition inside, on every path of an iteration (block-shape independent; once per entry)."""
    if getattr(values, "stepped_loops", None) is not None:
        return values.stepped_loops
    cfg = values.cfg
    order = {b: k for k, b in enumerate(values._rpo())}
    backs: dict = {}
    for blk in cfg.blocks:
        if blk.id not in cfg.reachable:
            continue
        for s, _ in blk.succs:
            if s != EXIT and order.get(s, -1) <= order.get(blk.id, -1):
                backs.setdefault(s, []).append(blk.id)
    out = []
    for h, latches in backs.items():
        if h in cfg.bf_cyclic:
            continue  # a cycle without a barrier: two threads may be in different iterations
        body, todo = {h}, list(latches)
        while todo:
            k = todo.pop()
            if k in body:
                continue
            body.add(k)
            todo.extend(cfg.blocks[k].preds)
        if not any(cfg.barrier_block[b] for b in body):
            continue
        loop = Loop(header=h, body=body, latches=latches)
        _carried(values, loop)
        if loop.phis:
            out.append(loop)
    values.stepped_loops = out
    return out


def _carried(values, loop: Loop) -> None:
    cfg, instrs = values.cfg, values.fn.instrs
    sites_of: dict = {}
    for nid in values.phis:
        node = values.nodes[nid]
        _, reg, sites, use_block = node
        if use_block in loop.body:
            sites_of.setdefault(reg, []).append((nid, sites))
    for reg, uses in sites_of.items():
        all_sites = set().union(*[s for _, s in uses])
        inside = [s for s in all_sites if cfg.block_of[s[0]] in loop.body]
        outside = [s for s in all_sites if cfg.block_of[s[0]] not in loop.body]
        if len(inside) != 1 or not outside or instrs[inside[0][0]].pred is not None:
            continue
        if not _on_every_iteration(cfg, loop, cfg.block_of[inside[0][0]]):
            continue
        loop.carried[reg] = (outside, inside[0])
        for nid, sites in uses:
            if inside[0] in sites:
                loop.phis[nid] = reg


def _on_every_iteration(cfg, loop: Loop, blk: int) -> bool:
    """Whether every path from the header to a latch's back edge passes ``blk``."""
    if blk == loop.header:
        return True
    seen, todo = set(), [loop.header]
    while todo:
        k = todo.pop()
        if k in seen or k == blk:
            continue
        seen.add(k)
        if k in loop.latches:
            return False
        todo.extend(s for s, _ in cfg.blocks[k].succs if s != EXIT and s in loop.body and s != loop.header)
    return True


def _uniform(a) -> Optional[int]:
    if a is None or a.size == 0 or not np.all(a == a[0]):
        return None
    return int(a[0])


def _leaves(sem, loop: Loop, blk: int) -> Optional[bool]:
    """Whether block ``blk``'s branch leaves the loop for this step (None: cannot tell)."""
    cfg = sem.v.cfg
    exits = [e for s, e in cfg.blocks[blk].succs if s == EXIT or s not in loop.body]
    if not exits:
        return False
    p = sem.branch_pred.get(blk)
    if p is None:
        return None if len(cfg.blocks[blk].succs) > 1 else True
    sem.ensure(p)
    v = _uniform(sem.evaluate(p))
    if v is None:
        return None
    return any(bool(v) == (e in ("taken", "exit")) for e in exits)


def steps(loop: Loop, sem, make_sem) -> Optional[list]:
    """[(binding {phi node: value}, its Semantics)] of the loop's iterations for this block shape, or None."""
    v = sem.v
    state = {}
    for reg, (outside, _inside) in loop.carried.items():
        vals = {_uniform(sem.evaluate(v.def_node[s])) for s in outside if s in v.def_node}
        if len(vals) != 1 or None in vals:
            return None
        state[reg] = vals.pop()
    out, seen = [], set()
    for _ in range(MAX_STEPS):
        key = tuple(sorted(state.items()))
        if key in seen:
            return out  # the counters repeat: every step is listed
        seen.add(key)
        bind = {nid: state[reg] for nid, reg in loop.phis.items()}
        s = make_sem(bind, loop.latches)
        at_header = _leaves(s, loop, loop.header)
        if at_header is None:
            return None
        if at_header:
            return out
        out.append((bind, s))
        nxt = {}
        for reg, (_outside, inside) in loop.carried.items():
            nxt[reg] = _uniform(s.evaluate(v.def_node[inside]))
            if nxt[reg] is None:
                return None
        leaves = [_leaves(s, loop, b) for b in loop.latches]
        if None in leaves:
            return None
        if all(leaves):
            return out
        state = nxt
    return None


class Stepping:
    """The steps of an entry's stepped loops for one block shape: the Semantics of each combination, and for a
    loop and a combination, that of the next iteration."""

    def __init__(self, analysis, sem, make_sem):
        self.an = analysis
        self.loops, per_loop = [], []
        for loop in loops_of(analysis.values):
            st = steps(loop, sem, make_sem)
            if st:
                self.loops.append(loop)
                per_loop.append(st)
        self.combos = []  # (index per loop, Semantics)
        self._by_index = {}
        if not self.loops:
            return
        total = 1
        for st in per_loop:
            total *= len(st)
        if total > MAX_COMBINATIONS:
            self.loops = []
            return
        for idx in itertools.product(*[range(len(st)) for st in per_loop]):
            if len(idx) == 1:
                s = per_loop[0][idx[0]][1]
            else:
                bind = {}
                for li, k in enumerate(idx):
                    bind.update(per_loop[li][k][0])
                s = make_sem(bind, [b for loop in self.loops for b in loop.latches])
            self.combos.append((idx, s))
            self._by_index[idx] = s
        self._reach_inside: dict = {}

    def __bool__(self) -> bool:
        return bool(self.loops)

    def next_sem(self, idx: tuple, li: int):
        nxt = idx[:li] + (idx[li] + 1,) + idx[li + 1:]
        return self._by_index.get(nxt)

    def entered_sem(self, idx: tuple, li: int, a: int):
        """The Semantics of the iteration of loop ``li`` that a barrier-free path from instruction ``a`` enters:
        from inside the loop the next one; from outside it the first (the loop run afresh: the next row of a
        grid-stride loop around it)."""
        if self.an.cfg.block_of[a] in self.loops[li].body:
            return self.next_sem(idx, li)
        return self._by_index.get(idx[:li] + (0,) + idx[li + 1:])

    def _reach_in_iteration(self, li: int, i: int) -> set:
        """What a thread may run after ``i`` before its next barrier without entering loop ``li``'s header."""
        key = (li, i)
        if key not in self._reach_inside:
            cfg, h = self.an.cfg, self.loops[li].header
            b = cfg.blocks[cfg.block_of[i]]
            out = set(range(i + 1, b.end))
            seen, todo = set(), [s for s, _ in b.succs if s != EXIT]
            while todo:
                k = todo.pop()
                if k in seen or k == h or cfg.barrier_block[k]:
                    continue
                seen.add(k)
                out.update(range(cfg.blocks[k].start, cfg.blocks[k].end))
                todo.extend(s for s, _ in cfg.blocks[k].succs if s != EXIT)
            self._reach_inside[key] = out
        return self._reach_inside[key]

    def crossing(self, a: int, b: int) -> list:
        """Loops whose header a barrier-free path from instruction ``a`` to ``b`` may enter (``b`` then runs in
        the next iteration)."""
        out = []
        for li, loop in enumerate(self.loops):
            h = self.an.cfg.blocks[loop.header]
            if self.an.cfg.barrier_block[loop.header]:
                continue
            if h.start in self.an.bfreach(a) and (b == h.start or b in self.an.cfg.barrier_free_reach(loop.header, h.start)):
                out.append(li)
        return out

    def within_one_iteration(self, a: int, b: int) -> bool:
        """Whether some barrier-free path joins ``a`` and ``b`` without entering a stepped loop's header."""
        if a == b or (b not in self.an.bfreach(a) and a not in self.an.bfreach(b)):
            return True  # one instruction, or two sides of one branch
        for li in range(len(self.loops)):
            if b not in self._reach_in_iteration(li, a) and a not in self._reach_in_iteration(li, b):
                return False
        return True
