"""Values read from lanes a partial warp does not have, and whether one can reach an output.

A block whose size is not a multiple of 32 has a last warp with fewer than 32 threads; the missing lanes never
run (they are as exited threads). What the PTX ISA says of ``shfl.sync`` (sm_70 and later):
- the executing thread waits until all *non-exited* threads named in membermask have executed it: a mask naming
  missing lanes does not hang (cub's BlockReduce names the whole warp in every shuffle and passes the partial
  warp's valid count down);
- undefined: the behaviour when the executing thread is not in membermask (not this case: every lane that
  runs it is named), and the *result* of a thread whose source lane is inactive or not in membermask;
- a computed source lane out of range (past the clamp of c) is no read at all: the thread copies its own
  operand and the predicate is false.
So such a shuffle is a defect only when a value read from a missing lane can reach an output; a library
discards it (the clamp makes the source lane out of range; or a select on ``lane + offset < valid`` keeps the
old value). Other collectives (vote, redux, match, bar.warp.sync) keep the inactive-lanes check of
verifier.lint.checks.

For one block shape, each shuffle that reads a missing lane in some thread (its source lane computed per thread
from its b and c operands, as the ISA defines it) *taints* its value in those threads. Taint flows per thread
through the value nodes of verifier.lint.dataflow: operations and phis take the union of their operands',
a ``selp`` (and a guarded definition, which is one) the taint of the operand its predicate picks in each
thread, a shuffle the taint of the lane it reads, a load the taint of its address. An *output* is a store,
atomic or copy whose address, value or guard is tainted in a thread that runs it, a load whose address is, or a
branch/exit on a tainted predicate. Memory is not followed: a tainted value stored to shared memory is reported
even when no thread reads it back (an over-report, never a miss).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from verifier.lint.dataflow import defs_of
from verifier.lint.issues import Issue

SINK_BASES = ("st", "atom", "red", "cp", "ld", "ldu", "bra", "ret", "exit", "trap")
_OPAQUE_COLLECTIVE = ("atom", "vote", "redux", "match")  # results made from operands that the node does not hold


def users_of(values) -> dict:
    """node -> the nodes computed from it (shuffles and opaque collectives included), once per entry."""
    if getattr(values, "absent_users", None) is not None:
        return values.absent_users
    instrs = values.fn.instrs
    users: dict = {}
    for i, n in enumerate(list(values.nodes)):
        kind = n[0]
        if kind in ("op", "fn", "shfl"):
            srcs = n[2]
        elif kind == "ld":
            srcs = (n[2],)
        elif kind == "phi":
            srcs = [values.def_node.get(site) for site in n[2]]
        elif kind == "x" and n[1] in _OPAQUE_COLLECTIVE and isinstance(n[2], int):
            ins = instrs[n[2]]
            srcs = [values.operand(ins.idx, a) for a in ins.args[1:] if a.strip()]
        else:
            continue
        for a in srcs:
            if a is not None:
                users.setdefault(a, []).append(i)
    values.absent_users = users
    return users


def source_lanes(sem, node) -> Optional[tuple]:
    """(source thread per thread, whether that source is in range) of a shuffle node, as PTX computes them, or
    None when its b or c operand cannot be evaluated."""
    mode, (_src, b, c, _mask) = node[1], node[2]
    sem.ensure(b)
    sem.ensure(c)
    bv, cv = sem.evaluate(b), sem.evaluate(c)
    if bv is None or cv is None or mode not in ("up", "down", "bfly", "idx"):
        return None
    lane = sem.env["lane"]
    bval, cval, seg = bv & 31, cv & 31, (cv >> 8) & 31
    max_lane = (lane & seg) | (cval & ~seg)
    if mode == "up":
        j = lane - bval
        ok = j >= max_lane
    elif mode == "down":
        j = lane + bval
        ok = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        ok = j <= max_lane
    else:
        j = (lane & seg) | (bval & ~seg)
        ok = j <= max_lane
    j = np.where(ok, j, lane)
    return sem.env["linear"] - lane + j, ok


class AbsentReads:
    """The absent-lane reads of one entry for one block shape and the outputs they reach."""

    def __init__(self, analysis, sem):
        self.a, self.sem = analysis, sem
        self.n = sem.nthreads
        self.values = analysis.values
        self._sinks = None

    def issues(self) -> list:
        n = self.n
        if n % 32 == 0:
            return []
        self.sinks()  # first: the operand nodes it makes (vector values, addresses) must be in users_of's map
        out = []
        for nid, node in enumerate(list(self.values.nodes)):
            if node[0] != "shfl" or node[4] != 0:
                continue
            ins = self.a.fn.instrs[node[3]]
            if self.a.cfg.block_of[ins.idx] not in self.a.cfg.reachable:
                continue
            src = source_lanes(self.sem, node)
            if src is None:
                absent = self.sem.warp_of >= n // 32  # the partial warp's lanes may read anywhere
                exact = False
            else:
                absent = src[0] >= n
                exact = True
            runs, _unknown = self.sem.guard_mask(ins)
            absent = absent & runs
            if not absent.any():
                continue
            hit = self._reach(nid, absent)
            if hit is None:
                continue
            sink, threads, how = hit
            t = int(threads[0])
            lane_read = (int(src[0][t]) % 32) if src is not None else None
            w = t // 32
            what = (f"thread {t} (lane {t % 32} of warp {w}) reads lane {lane_read}" if lane_read is not None
                    else f"lanes of warp {w} may read lanes")
            sev = "error" if exact else "warning"
            tail = "" if exact else "; its source lane cannot be computed, so cannot decide"
            out.append(Issue(
                "inactive-lanes", sev,
                f"`{ins.op}` in block {'x'.join(map(str, self.sem.block))} ({n} threads; the block size is not a "
                f"multiple of 32, warp {n // 32} has only {n % 32} lanes): {what}, which does not exist, and the "
                f"undefined value reaches {how}{tail}",
                at=ins.idx, other=sink, other_role="output"))
        return out

    # -- taint ---------------------------------------------------------------------------------------
    def _reach(self, seed: int, absent: np.ndarray):
        """The first output the taint of ``seed`` (tainted in the threads ``absent``) reaches:
        (instr idx, threads, what) or None."""
        taint = self._propagate(seed, absent)
        for ins, nodes in self.sinks():
            bad = np.zeros(self.n, dtype=bool)
            for nid in nodes:
                t = taint.get(nid)
                if t is not None:
                    bad |= t
            if not bad.any():
                continue
            runs, _unknown = self.sem.guard_mask(ins)
            bad &= runs
            if bad.any():
                return ins.idx, np.nonzero(bad)[0], _what(ins)
        return None

    def sinks(self) -> list:
        """[(instr, operand nodes whose taint makes it an output)] of the reachable instructions."""
        if self._sinks is None:
            v, cfg, out = self.values, self.a.cfg, []
            for ins in self.a.fn.instrs:
                if ins.base not in SINK_BASES or cfg.block_of[ins.idx] not in cfg.reachable:
                    continue
                nodes = []
                if ins.pred is not None:
                    nodes.append(v.pred_value(ins))
                if ins.base in ("ld", "ldu"):
                    if len(ins.args) > 1:
                        nodes.append(v.operand(ins.idx, ins.args[1]))
                elif ins.base not in ("bra", "ret", "exit", "trap"):
                    args = ins.args[1:] if defs_of(ins) else ins.args
                    nodes += [v.operand(ins.idx, a) for a in args if a.strip() and not a.strip().startswith("$")]
                if nodes:
                    out.append((ins, nodes))
            self._sinks = out
        return self._sinks

    def _propagate(self, seed: int, absent: np.ndarray) -> dict:
        users = users_of(self.values)
        nodes = self.values.nodes
        taint = {seed: absent.copy()}
        todo = list(users.get(seed, ()))
        while todo:
            u = todo.pop()
            new = self._transfer(u, nodes[u], taint)
            if new is None or not new.any():
                continue
            old = taint.get(u)
            if old is not None:
                new = new | old
                if np.array_equal(new, old):
                    continue
            taint[u] = new
            todo.extend(users.get(u, ()))
        return taint

    def _known_false(self, p) -> Optional[np.ndarray]:
        return _known_false_of(self.sem, self.values, p)

    def _transfer(self, nid: int, node, taint: dict) -> Optional[np.ndarray]:
        n, sem = self.n, self.sem
        none = None

        def t(x):
            return taint.get(x) if x is not None else None

        def union(xs):
            acc = none
            for x in xs:
                tx = t(x)
                if tx is not None:
                    acc = tx.copy() if acc is None else acc | tx
            return acc

        kind = node[0]
        if kind == "op" and node[1] == "selp":
            a, b, p = node[2]
            sem.ensure(p)
            pv = sem.evaluate(p)
            if pv is None:
                off = self._known_false(p)  # `c && (v > m)`: where c is false the select keeps b, whatever v is
                both = union((a, b, p))
                if off is None or both is None:
                    return both
                tb = t(b)
                return (both & ~off) | (tb & off if tb is not None else np.zeros(n, dtype=bool))
            pv = pv.astype(bool)
            ta, tb = t(a), t(b)
            out = np.zeros(n, dtype=bool)
            if ta is not None:
                out |= ta & pv
            if tb is not None:
                out |= tb & ~pv
            return out
        if kind in ("op", "fn"):
            return union(node[2])
        if kind == "ld":
            return union((node[2],))
        if kind == "phi":
            return union([self.values.def_node.get(s) for s in node[2]])
        if kind == "shfl":
            src, b, c, _mask = node[2]
            own = union((b, c))
            if node[4] != 0:
                return own
            ts = t(src)
            if ts is None:
                return own
            lanes = source_lanes(sem, node)
            if lanes is None:  # any lane of the warp may be read
                per_warp = np.zeros(n, dtype=bool)
                for w in np.unique(sem.warp_of[ts]):
                    per_warp |= sem.warp_of == w
                got = per_warp
            else:
                j = np.minimum(lanes[0], n - 1)
                got = ts[j] & (lanes[0] < n)
            return got if own is None else got | own
        if kind == "x":
            ins = self.values.fn.instrs[node[2]]
            ops = union([self.values.operand(ins.idx, a) for a in ins.args[1:] if a.strip()])
            if ops is None or not ops.any():
                return None
            return np.ones(n, dtype=bool)  # a collective mixes lanes; an atomic's result is the memory's
        return None


def _known_false_of(sem, values, p) -> Optional[np.ndarray]:
    """The threads where predicate ``p``, an ``and`` of predicates, is false by an operand known at the block shape
    (cub's guarded fold: `(num_valid > 32 k) && (v > m)`), or None."""
    node = values.nodes[p]
    if node[0] != "op" or node[1] not in ("and.pred", "and"):
        return None
    off = np.zeros(sem.nthreads, dtype=bool)
    for x in node[2]:
        sem.ensure(x)
        v = sem.evaluate(x)
        if v is not None:
            off |= ~v.astype(bool)
    return off if off.any() else None


def _what(ins) -> str:
    if ins.base in ("bra", "ret", "exit", "trap"):
        return f"the condition of `{ins.op}`"
    if ins.base in ("ld", "ldu"):
        return f"the address of `{ins.op}`"
    return f"`{ins.op}` (its address, value or guard)"
