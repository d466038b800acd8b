"""The four static checks on one PTX entry for one block shape.

Each check yields ``Issue``s: what is wrong, the severity ('error' proven, 'warning' could not decide) and
the two instruction indices involved. ``analyze`` runs them all.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from verifier.lint.cfg import CFG, EXIT
from verifier.lint.dataflow import CTAID, DATA, UNIFORM, VARYING, WARP, Values
from verifier.lint.semantics import Semantics

CLASSES = ("divergent-barrier", "shared-race", "inactive-lanes", "global-race", "not-followed")
_WARP_SYNC_OPS = ("shfl", "vote", "redux", "match")
_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
               "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16}
FULL_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class Issue:
    cls: str  # one of CLASSES
    severity: str  # 'error' | 'warning'
    message: str
    at: int  # instruction index of the first program point
    other: Optional[int] = None  # the second program point
    other_role: str = ""  # what the second point is ('branch', 'early exit', 'read', ...)


@dataclass(frozen=True)
class EntryFacts:
    """What the analysis needs to know about how an entry is launched."""

    blocks: tuple  # distinct block shapes (x, y, z) of its launches
    max_grid_blocks: int  # most blocks in one launch


def access_bytes(op: str) -> int:
    parts = op.split(".")
    vec = 1
    for p in parts:
        if p in ("v2", "v4", "v8"):
            vec = int(p[1])
    t = next((p for p in reversed(parts) if p in _TYPE_BYTES), "b32")
    return vec * _TYPE_BYTES[t]


def _space(op: str) -> str:
    parts = op.split(".")
    return next((p for p in parts[1:] if p in ("global", "shared", "local", "param", "const")), "generic")


class EntryAnalysis:
    """CFG and value nodes of one entry; ``run(facts)`` checks it for each launched block shape."""

    def __init__(self, mod, fn):
        self.mod, self.fn = mod, fn
        self.cfg = CFG(fn)
        shared = dict(mod.shared)
        shared.update(fn.shared)
        self.shared = shared
        self.values = Values(fn, self.cfg, shared)
        self._bfreach: dict = {}

    def run(self, facts: EntryFacts) -> list:
        issues: dict = {}
        for ins in self.fn.instrs:  # what the analysis does not follow is said, never passed silently
            if ins.base in ("call", "brx"):
                what = "calls " + next((a for a in ins.args if not a.startswith("(")), "a function") \
                    if ins.base == "call" else "branches indirectly"
                issues[("not-followed", ins.idx, None)] = Issue(
                    "not-followed", "warning", f"`{ins.op}`: the entry {what}; what happens there (barriers, "
                    "shared-memory accesses, warp collectives) is not checked", at=ins.idx)
        for block in facts.blocks:
            sem = Semantics(self.values, block)
            for iss in (self.divergent_barriers(sem) + self.inactive_lanes(sem, block) +
                        self.shared_races(sem) + self.global_races(sem, facts)):
                key = (iss.cls, iss.at, iss.other)
                if key not in issues or (issues[key].severity == "warning" and iss.severity == "error"):
                    issues[key] = iss
        return list(issues.values())

    # -- helpers ------------------------------------------------------------------------------------
    def bfreach(self, idx: int) -> set:
        """Instructions a thread may execute after ``idx`` before its next block barrier."""
        if idx not in self._bfreach:
            self._bfreach[idx] = self.cfg.barrier_free_reach(self.cfg.block_of[idx], idx)
        return self._bfreach[idx]

    def _worst_guard(self, sem: Semantics, instr, floor: int):
        """The nearest guard of ``instr`` whose level is >= floor: (level, branch instr idx, sense)."""
        best = None
        for p, sense, at in sem.guards(instr):
            lv = sem.levels[p]
            if lv >= floor and (best is None or lv > best[0]):
                best = (lv, at, sense, p)
        return best

    def _exits_without_barrier(self, branch_idx: int, sense: bool) -> bool:
        """Whether the side of the branch NOT taken with ``sense`` can end the thread (ret/exit) before any
        block barrier: the threads going that way leave the block early."""
        cfg = self.cfg
        b = cfg.block_of[branch_idx]
        want = ("fall", "exit") if sense else ("taken",)
        todo = [s for s, e in cfg.blocks[b].succs if e in want]
        seen = set()
        while todo:
            k = todo.pop()
            if k == EXIT:
                return True
            if k in seen or cfg.barrier_block[k]:
                continue
            seen.add(k)
            todo.extend(s for s, _ in cfg.blocks[k].succs)
        return False

    # -- 1. divergent barrier -------------------------------------------------------------------------
    def divergent_barriers(self, sem: Semantics) -> list:
        out = []
        cfg = self.cfg
        for b in cfg.blocks:
            if not cfg.barrier_block[b.id] or b.id not in cfg.reachable:
                continue
            ins = self.fn.instrs[b.start]
            g = self._worst_guard(sem, ins, WARP)
            if g is None:
                continue
            lv, at, sense, _p = g
            what = ("condition that is the same within a warp but differs between warps" if lv == WARP
                    else "thread-dependent condition")
            if self._exits_without_barrier(at, sense):
                out.append(Issue("divergent-barrier", "error",
                                 f"`{ins.op}` is reached after an early exit under a {what}: the threads that left "
                                 f"never arrive and the others wait at a barrier not every thread reaches "
                                 f"(undefined behaviour; may hang)", at=ins.idx, other=at, other_role="early exit"))
            else:
                out.append(Issue("divergent-barrier", "error",
                                 f"`{ins.op}` is under a {what}: threads on the other side skip this barrier "
                                 f"while the rest wait at it (undefined behaviour; may hang, or let reads race)",
                                 at=ins.idx, other=at, other_role="branch"))
        return out

    # -- 3. shuffles / votes with inactive lanes --------------------------------------------------------
    def _mask_arg(self, ins) -> Optional[str]:
        if ins.base in _WARP_SYNC_OPS and "sync" in ins.parts:
            return ins.args[-1]
        if ins.op.startswith("bar.warp.sync"):
            return ins.args[0]
        return None

    def inactive_lanes(self, sem: Semantics, block: tuple) -> list:
        out = []
        n = sem.nthreads
        for ins in self.fn.instrs:
            if self.cfg.block_of[ins.idx] not in self.cfg.reachable:
                continue
            arg = self._mask_arg(ins)
            if arg is None:
                continue
            mnode = self.values.operand(ins.idx, arg)
            sem.ensure(mnode)
            sem_mask = sem.evaluate(mnode)
            if sem_mask is None:
                node = self.values.nodes[mnode]
                if node[0] == "x" and node[1] == "activemask":
                    continue
                out.append(Issue("inactive-lanes", "warning",
                                 f"`{ins.op}` takes a member mask computed at run time; cannot decide that every "
                                 f"lane it names is active", at=ins.idx))
                continue
            if not np.all(sem_mask == sem_mask[0]):
                out.append(Issue("inactive-lanes", "warning",
                                 f"`{ins.op}`: the member mask differs between threads; cannot decide that every "
                                 f"lane it names is active", at=ins.idx))
                continue
            mask = int(sem_mask[0]) & FULL_MASK
            runs, unknown = sem.guard_mask(ins)
            unknown_v = [u for u in unknown if sem.levels[u[0]] >= VARYING]
            if unknown_v:
                p, sense, at = unknown_v[0]
                out.append(Issue("inactive-lanes", "error",
                                 f"`{ins.op}` with member mask {mask:#010x} runs under a thread-dependent condition: "
                                 f"lanes of a warp can be on the other side, yet the mask names them (undefined "
                                 f"result; may hang)", at=ins.idx, other=at, other_role="branch"))
                continue
            nwarps = -(-n // 32)
            for w in range(nwarps):
                lanes = np.arange(w * 32, min(n, w * 32 + 32)) - w * 32
                act = runs[w * 32: w * 32 + 32]
                if not act.any():
                    continue
                named = [j for j in range(32) if mask >> j & 1]
                missing = [j for j in named if j >= len(lanes)]
                if missing:
                    out.append(Issue("inactive-lanes", "error",
                                     f"`{ins.op}` names lanes {_lanes(missing)} in mask {mask:#010x}, but block "
                                     f"{_shape(block)} has {n} threads: warp {w} has only {len(lanes)} lanes (the "
                                     f"block size is not a multiple of 32)", at=ins.idx))
                    break
                inactive = [j for j in named if not act[j]]
                if inactive:
                    g = self._worst_guard(sem, ins, VARYING)
                    out.append(Issue("inactive-lanes", "error",
                                     f"`{ins.op}` with member mask {mask:#010x} runs in warp {w} with lanes "
                                     f"{_lanes(inactive)} inactive (they are on the other side of a thread-dependent "
                                     f"condition) although the mask names them (undefined result; may hang)",
                                     at=ins.idx, other=g[1] if g else None, other_role="branch"))
                    break
        return out

    # -- 2. shared-memory hazards within one barrier interval --------------------------------------------
    def _shared_accesses(self) -> list:
        out = []
        for ins in self.fn.instrs:
            if self.cfg.block_of[ins.idx] not in self.cfg.reachable:
                continue
            base = ins.base
            if base not in ("ld", "st", "atom", "red") or _space(ins.op) != "shared":
                continue
            if base == "ld":
                addr_arg, kind = ins.args[1], "read"
            elif base == "st":
                addr_arg, kind = ins.args[0], "write"
            elif base == "atom":
                addr_arg, kind = ins.args[1], "atomic"
            else:
                addr_arg, kind = ins.args[0], "atomic"
            out.append((ins, kind, self.values.address(ins.idx, addr_arg), access_bytes(ins.op)))
        return out

    def _phases(self) -> list:
        cfg = self.cfg
        starts = []
        if cfg.blocks and not cfg.barrier_block[0]:
            starts.append((0, -1))
        for b in cfg.blocks:
            if cfg.barrier_block[b.id] and b.id in cfg.reachable:
                starts.append((b.id, b.start))
        out = []
        for blk, idx in starts:
            reach = cfg.barrier_free_reach(blk, idx)
            if idx == -1:
                reach |= set(range(cfg.blocks[0].start, cfg.blocks[0].end))
            out.append(reach)
        return out

    def _concurrent(self, sem: Semantics, a, b, phase: set) -> bool:
        if a == b or b in self.bfreach(a) or a in self.bfreach(b):
            return True
        cfg = self.cfg
        for blk in cfg.blocks:
            if len(blk.succs) < 2 or blk.end - 1 not in phase:
                continue
            p = sem.branch_pred.get(blk.id)
            divergent = blk.id in cfg.bf_cyclic or (p is not None and sem.levels[p] >= WARP)
            if not divergent:
                continue
            sides = []
            for s, _ in blk.succs:
                if s == EXIT:
                    sides.append(set())
                    continue
                first = cfg.blocks[s].start
                sides.append(set() if cfg.barrier_block[s] else ({first} | self.bfreach(first)))
            for i, si in enumerate(sides):
                for j, sj in enumerate(sides):
                    if i != j and a in si and b in sj:
                        return True
        return False

    def shared_races(self, sem: Semantics) -> list:
        acc = self._shared_accesses()
        if not acc:
            return []
        out, seen = [], set()
        phases = self._phases()
        ins_ok = {}
        for phase in phases:
            inside = [x for x in acc if x[0].idx in phase]
            for i, A in enumerate(inside):
                for B in inside[i:]:
                    if A[1] != "write" and B[1] != "write":
                        continue  # read/read, atomic/atomic, read/atomic
                    key = (A[0].idx, B[0].idx)
                    if key in seen:
                        continue
                    if not self._concurrent(sem, A[0].idx, B[0].idx, phase):
                        continue
                    seen.add(key)
                    iss = self._compare(sem, A, B, ins_ok)
                    if iss is not None:
                        out.append(iss)
        return out

    def _base_split(self, terms: dict):
        base, other = {}, {}
        for atom, c in terms.items():
            node = self.values.nodes[atom]
            if node[0] == "sym" and node[1] in self.shared:
                name = node[1] if self.shared[node[1]] is not None else "<dynamic shared memory>"
                base[name] = base.get(name, 0) + c
            else:
                other[atom] = c
        return base, other

    def _compare(self, sem: Semantics, A, B, cache) -> Optional[Issue]:
        (ia, ka, aa, wa), (ib, kb, ab, wb) = A, B
        first, second = (A, B) if ib.idx in self.bfreach(ia.idx) or ia.idx == ib.idx else (B, A)
        kind = {("write", "read"): "RAW", ("read", "write"): "WAR", ("write", "write"): "WAW"}.get(
            (first[1], second[1]), "atomic/plain")
        ta, ra = sem.decompose(aa)
        tb, rb = sem.decompose(ab)
        base_a, other_a = self._base_split(ta)
        base_b, other_b = self._base_split(tb)
        if base_a and base_b and base_a != base_b and len(base_a) == 1 and len(base_b) == 1 \
                and list(base_a.values()) == [1] and list(base_b.values()) == [1]:
            return None  # two different shared variables
        undecided = None
        if not base_a or not base_b:
            undecided = "an address is not a known shared variable plus an offset"
        elif other_a != other_b:
            undecided = "the addresses differ by run-time values this analysis cannot compare"
        else:
            for atom in other_a:
                sem.ensure(atom)
                if sem.levels[atom] != UNIFORM or not sem.invariant[atom]:
                    undecided = ("an address depends on a value that can differ between threads or between loop "
                                 "iterations of one barrier interval")
                    break
        if undecided:
            return Issue("shared-race", "warning",
                         f"cannot decide whether the {first[1]} and the {second[1]} of shared memory touch the same "
                         f"address in one barrier interval ({undecided}); if they can, a barrier is missing",
                         at=first[0].idx, other=second[0].idx, other_role=second[1])
        n = sem.nthreads
        xa = sem.evaluate(ra) if ra is not None else np.zeros(n, dtype=np.int64)
        xb = sem.evaluate(rb) if rb is not None else np.zeros(n, dtype=np.int64)
        ga, _ = sem.guard_mask(ia)
        gb, _ = sem.guard_mask(ib)
        hit = _overlap(xa, wa, ga, xb, wb, gb)
        if hit is None:
            return None
        t1, t2, off = hit
        if first is not A:  # name the threads in program order of the two accesses
            t1, t2 = t2, t1
        name = next(iter(base_a))
        return Issue("shared-race", "error",
                     f"{kind} hazard on shared memory: thread {t1} {_verb(first[1])} {_short(name)}+{off} and thread "
                     f"{t2} {_verb(second[1])} it with no barrier between them on some path (a missing "
                     f"__syncthreads())", at=first[0].idx, other=second[0].idx, other_role=second[1])

    # -- 4. cross-block global race -------------------------------------------------------------------------
    def global_races(self, sem: Semantics, facts: EntryFacts) -> list:
        if facts.max_grid_blocks <= 1:
            return []
        out = []
        for ins in self.fn.instrs:
            if ins.base != "st" or _space(ins.op) not in ("global", "generic"):
                continue
            if self.cfg.block_of[ins.idx] not in self.cfg.reachable:
                continue
            addr = self.values.address(ins.idx, ins.args[0])
            terms, _ = sem.decompose(addr)
            if any(self.values.nodes[a][0] == "sym" and self.values.nodes[a][1] in self.shared for a in terms):
                continue  # a generic store into shared memory
            sem.ensure(addr)
            d = sem.deps[addr]
            if d & CTAID:
                continue
            if any(sem.deps[p] & CTAID for p, _, _ in sem.guards(ins)):
                continue  # only some blocks store (e.g. blockIdx.x == 0)
            if d & DATA:
                out.append(Issue("global-race", "warning",
                                 f"`{ins.op}` stores to a global address computed from loaded data, not from the "
                                 f"block index; cannot decide that blocks write different addresses (grid up to "
                                 f"{facts.max_grid_blocks} blocks)", at=ins.idx))
                continue
            out.append(Issue("global-race", "error",
                             f"`{ins.op}` is a plain store to a global address that does not depend on the block "
                             f"index, in a kernel launched with up to {facts.max_grid_blocks} blocks: every block "
                             f"writes the same location (a cross-block race; use one writer block or an atomic)",
                             at=ins.idx, other=ins.idx, other_role="same store in another block"))
        return out


def _verb(kind: str) -> str:
    return {"write": "writes", "read": "reads", "atomic": "atomically updates"}[kind]


def _short(name: str) -> str:
    m = re.search(r"E(\d+)([A-Za-z_]\w*)$", name)  # _ZZ...E7scratch -> scratch
    if m and len(m.group(2)) == int(m.group(1)):
        return m.group(2)
    return name


def _lanes(lst) -> str:
    if len(lst) > 6:
        return f"{lst[0]}..{lst[-1]} ({len(lst)} lanes)"
    return ", ".join(map(str, lst))


def _shape(block) -> str:
    return "x".join(str(b) for b in block)


def _overlap(xa, wa, ga, xb, wb, gb):
    """(thread a, thread b, byte offset) of two different threads whose accesses [x, x+w) overlap, or None."""
    ta = np.nonzero(ga)[0]
    tb = np.nonzero(gb)[0]
    if ta.size == 0 or tb.size == 0:
        return None
    ba = (xa[ta][:, None] + np.arange(wa)[None, :]).ravel()
    tha = np.repeat(ta, wa)
    bb = (xb[tb][:, None] + np.arange(wb)[None, :]).ravel()
    thb = np.repeat(tb, wb)
    common = np.intersect1d(ba, bb)
    if common.size == 0:
        return None
    for byte in common[:4096]:
        sa = tha[ba == byte]
        sb = thb[bb == byte]
        if sa.size > 1 or sb.size > 1 or sa[0] != sb[0]:
            t1 = int(sa[0])
            t2 = int(next((t for t in sb if t != t1), sb[0]))
            if t1 == t2:
                t1 = int(next(t for t in sa if t != t2))
            return t1, t2, int(byte)
    return None
