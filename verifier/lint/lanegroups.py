"""Whether a thread-dependent guard of a shuffle keeps together the lanes that the shuffle connects.

A full-mask ``shfl.sync`` under a guard whose value the lint cannot compute (``row < rows``, rows a kernel
argument) is no defect by itself when the lanes on the other side leave the kernel: PTX's ``shfl.sync`` waits
only for the *non-exited* threads named in its mask. What is undefined is the value a lane reads from one that
is not there. OneFlow's ``SoftmaxWarpImpl`` (and its many copies) gives each group of 2..16 lanes of a warp a
row of its own, loops over rows while ``row < rows`` and shuffles with mask 0xffffffff inside each group: the
groups past the last row exit, and no lane reads across a group. Such a guard is accepted when
- the side of the guard that skips the shuffle reaches the kernel's exit through no barrier and no warp
  collective (the lanes going that way never meet another one); and
- the guard's predicate is provably equal in every thread and the lane it reads (``lane_key``): the value it
  reads comes from a lane on its own side.
Anything else stays an inactive-lanes error (verifier.lint.checks).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from verifier.lint import isa
from verifier.lint.absent import source_lanes
from verifier.lint.cfg import EXIT
from verifier.lint.dataflow import WARP


def lane_key(sem, values, nid: int, busy: frozenset = frozenset()) -> Optional[np.ndarray]:
    """A per-thread key of node ``nid``: two lanes of one warp with equal keys hold equal values (in the same
    iteration of the loops around it); None when no key is known. A computed value is its own key; a value one
    in every lane of a warp has one key; an operation combines its operands' keys; a loop-carried register
    (phi) combines the keys of its definitions, its own update reading it adding nothing (equal start and equal
    steps keep two lanes equal, iteration by iteration)."""
    memo = sem.__dict__.setdefault("_lane_keys", {})  # one per block shape: shared operands are keyed once
    if (nid, busy) not in memo:
        memo[(nid, busy)] = _lane_key(sem, values, nid, busy)
    return memo[(nid, busy)]


def _lane_key(sem, values, nid: int, busy: frozenset) -> Optional[np.ndarray]:
    n = sem.nthreads
    sem.ensure(nid)
    a = sem.evaluate(nid)
    if a is not None:
        return a
    if sem.levels[nid] <= WARP:
        return np.zeros(n, dtype=np.int64)
    node = values.nodes[nid]
    if node[0] == "op" and (k := _quotient_key(sem, node)) is not None:
        return k
    if node[0] == "op":
        parts = [lane_key(sem, values, x, busy) for x in node[2]]
    elif node[0] == "phi":
        if nid in busy:
            return np.zeros(n, dtype=np.int64)
        defs = [values.def_node.get(s) for s in node[2]]
        if any(d is None for d in defs):
            return None
        parts = [lane_key(sem, values, d, busy | {nid}) for d in defs]
    else:
        return None
    if any(p is None for p in parts):
        return None
    if not parts:
        return np.zeros(n, dtype=np.int64)
    return np.unique(np.stack(parts, axis=1), axis=0, return_inverse=True)[1].reshape(n)


def _quotient_key(sem, node) -> Optional[np.ndarray]:
    """The key of ``(S + T) / d`` (a division or right shift by one constant d of a non-negative value): S, the
    terms on values one in every lane of a warp, all multiples of d, T the part computed per thread; the quotient
    is S / d + floor(T / d), so floor(T / d) keys it. ``(threadIdx.x + block * blockDim.x) / 16`` is then one key
    per aligned group of 16 lanes, as lmdeploy's QkRMSNorm gives each group a head."""
    name = node[1]
    if not (name.startswith("div.") or name.startswith("shr.")) or len(node[2]) != 2:
        return None
    a, b = node[2]
    sem.ensure(b)
    c = sem.evaluate(b)
    if c is None or not (c == c[0]).all() or int(c[0]) <= 0 or int(c[0]) >= 63:
        return None
    d = int(c[0]) if name.startswith("div.") else 1 << int(c[0])
    terms, rest = sem.decompose(a)
    for atom, coeff in terms.items():
        if not isinstance(atom, int) or sem.levels[atom] > WARP or coeff % d:
            return None
    t = np.zeros(sem.nthreads, dtype=np.int64) if rest is None else sem.evaluate(rest)
    if t is None:
        return None
    # unsigned with d a power of two: S + T wraps modulo 2^32 (or 2^64), a multiple of d, so the identity holds
    # for 0 <= T; signed, or another d: a negative sum truncates toward zero, so it must be non-negative
    modular = name.endswith((".u", ".u32", ".u64")) and d & (d - 1) == 0 and bool((t >= 0).all())
    if not (modular or sem.nonneg(a)):
        return None
    return np.floor_divide(t, d)


def leaves_for_good(analysis, branch_idx: int, sense: bool) -> bool:
    """Whether every path from the side of the branch NOT taken with ``sense`` ends the thread with no barrier
    and no warp collective on the way (and never comes back to the branch)."""
    cfg = analysis.cfg
    b = cfg.block_of[branch_idx]
    todo = cfg.other_side(branch_idx, sense)
    seen = set()
    while todo:
        k = todo.pop()
        if k == EXIT or k in seen:
            continue
        if k == b or cfg.barrier_block[k]:
            return False
        blk = cfg.blocks[k]
        if any(ins.parts[0] in isa.MASKED_BASES for ins in analysis.fn.instrs[blk.start:blk.end]):
            return False
        seen.add(k)
        todo.extend(s for s, _ in blk.succs)
    return True


def keeps_groups(analysis, sem, ins, guard) -> bool:
    """Whether shuffle ``ins`` under the unknown ``guard`` (predicate node, sense, branch index) only reads lanes
    on its own side, the other side leaving the kernel (module docstring)."""
    if ins.parts[0] != "shfl":
        return False  # vote/redux/match fold every named lane's operand
    p, sense, at = guard
    if not leaves_for_good(analysis, at, sense):
        return False
    node = next((nd for nd in analysis.values.nodes if nd[0] == "shfl" and nd[3] == ins.idx), None)
    src = source_lanes(sem, node) if node is not None else None
    key = lane_key(sem, analysis.values, p)
    if src is None or key is None:
        return False
    j, ok = src
    inside = ok & (j < sem.nthreads)  # a read past a partial warp is verifier.lint.absent's
    return bool(np.all(key[np.where(inside, j, np.arange(sem.nthreads))] == key))
