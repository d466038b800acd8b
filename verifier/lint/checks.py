"""The four static checks on one PTX entry for one block shape (the shared-memory hazard check lives in
verifier.lint.races), and the ``not-followed`` warnings for what the entry does that they do not model.

Each check yields ``Issue``s: what is wrong, the severity ('error' proven, 'warning' could not decide) and
the two instruction indices involved. ``EntryAnalysis.run`` runs them all.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np

from verifier.lint import gridstride, isa, races
from verifier.lint.absent import AbsentReads
from verifier.lint.cfg import CFG, EXIT
from verifier.lint.dataflow import CTAID, DATA, VARYING, WARP, Values
from verifier.lint.lanegroups import keeps_groups
from verifier.lint.issues import CLASSES, EntryFacts, Issue  # noqa: F401  (the checks' vocabulary, re-exported)
from verifier.lint.nulls import Decider, Folding, note
from verifier.lint.offsets import OffsetCheck
from verifier.lint.semantics import Semantics
from verifier.lint.unwritten import unwritten_reads
from verifier.lint.stepped import Stepping

FULL_MASK = 0xFFFFFFFF


class EntryAnalysis:
    """CFG and value nodes of one entry; ``run(facts)`` checks it for each launched block shape."""

    def __init__(self, mod, fn, nulls=(), once=frozenset()):
        """``once``: latch branches of grid-stride loops no launch takes (verifier.lint.gridstride): decided not
        taken, as the null tests are."""
        self.mod, self.fn, self.nulls, self.once = mod, fn, tuple(nulls), frozenset(once)
        self.cfg = CFG(fn)
        shared = dict(mod.shared)
        shared.update(fn.shared)
        self.shared = shared
        self.values = Values(fn, self.cfg, shared)
        self.null_note = None  # what the null pointer arguments left out (verifier.lint.nulls)
        decided, folding = {}, None
        if nulls:
            decider = Decider(self.values, nulls)
            decided = decider.decided()
            if decided or decider.selects:  # the analysis of the launches as made: code under those tests never runs
                folding = Folding(nulls)
                full = self.cfg
                self.cfg = CFG(fn, decided)
                self.values = Values(fn, self.cfg, shared, decide=folding)
                if not once:
                    self.null_note = note(full, self.cfg, decider, decided)
        if once:  # the launches' trip count: one iteration per block
            self.cfg = CFG(fn, {**dict.fromkeys(once, False), **decided})  # a null test's decision stands
            self.values = Values(fn, self.cfg, shared, decide=folding)
        self._variants: dict = {}  # frozenset of decided latches -> the EntryAnalysis with them decided
        self._bfreach: dict = {}
        self.collectives = [(ins, arg) for ins in fn.instrs if ins.parts[0] in isa.MASKED_BASES
                            and (arg := isa.mask_arg(ins)) is not None
                            and self.cfg.block_of[ins.idx] in self.cfg.reachable]  # warp collectives, masks

    def run(self, facts: EntryFacts) -> list:
        issues = {("not-followed", iss.at, None): iss for iss in self.not_followed()}
        if self.null_note is not None:
            issues[(self.null_note.cls, self.null_note.at, None)] = self.null_note
        for iss in OffsetCheck(self).issues(facts):  # of the launches' argument values, not of a block shape
            issues.setdefault((iss.cls, iss.at, iss.other), iss)
        for block in facts.blocks:
            for iss in self.at_shape(block, facts):
                key = (iss.cls, iss.at, iss.other)
                prev = issues.get(key)
                if prev is None or (prev.severity == "warning" and iss.severity == "error"):
                    issues[key] = replace(iss, blocks=(block,))  # an error found at one shape: that shape's
                elif prev.severity == iss.severity and prev.blocks:
                    issues[key] = replace(prev, blocks=prev.blocks + (block,))
        return list(issues.values())

    def at_shape(self, block: tuple, facts: EntryFacts) -> list:
        """The block-shape checks' issues at one shape, with the grid-stride loops that every launch there runs once
        per block taken as running once (verifier.lint.gridstride); a hazard found only across two iterations of
        one some launch repeats names that launch."""
        once, twice = gridstride.decide(self.values, facts, block)
        found = self.variant(once).checks(block, facts)
        if not twice:
            return found
        alone = {(iss.cls, iss.at, iss.other): iss.severity
                 for iss in self.variant(set(once) | set(twice)).checks(block, facts)}
        branch, (launch, reason) = min(twice.items(), key=lambda kv: gridstride.first_shown(kv[1][0]))
        why = gridstride.across_rows(self.values, branch, launch, reason, facts.labels)
        return [replace(iss, message=iss.message + why)
                if iss.cls == "shared-race" and iss.severity in ("error", "warning") and
                alone.get((iss.cls, iss.at, iss.other)) not in (iss.severity, "error") else iss for iss in found]

    def variant(self, once) -> "EntryAnalysis":
        """This entry with the back edges at the latches ``once`` decided not taken (self where none)."""
        once = frozenset(once) | self.once
        if once == self.once:
            return self
        if once not in self._variants:
            self._variants[once] = EntryAnalysis(self.mod, self.fn, self.nulls, once)
        return self._variants[once]

    def checks(self, block: tuple, facts: EntryFacts) -> list:
        """The issues of the checks that depend on the block shape, at one."""
        sem = Semantics(self.values, block)
        stepping = Stepping(self, sem, lambda bind, free: Semantics(self.values, block, bind, free))
        return (self.divergent_barriers(sem) + self.inactive_lanes(sem, block) +
                races.shared_races(self, sem, stepping) + self.global_races(sem, facts) +
                unwritten_reads(self, sem))

    def not_followed(self) -> list:
        """What the analysis does not follow is said, never passed silently (one warning per kind of thing)."""
        out, said = [], set()
        left_out = set(self.null_note.skipped) if self.null_note is not None else ()
        for ins in self.fn.instrs:
            if ins.parts[0] not in isa.NOT_FOLLOWED_BASES or ins.idx in left_out:
                continue
            if isa.call_target(ins) in isa.SYSTEM_CALLS:  # assert() / printf(): nothing there to follow
                continue
            why = isa.not_modelled(ins)
            if ins.base in ("call", "brx"):
                what = "calls " + next((a for a in ins.args if not a.startswith("(")), "a function") \
                    if ins.base == "call" else "branches indirectly"
                why = f"the entry {what}; what happens there (barriers, shared-memory accesses, warp collectives) " \
                      "is not checked"
            elif ins.op.startswith("barrier.cluster") and ins.idx not in self.cfg.barriers and not (
                    ins.idx > 0 and ins.idx - 1 in self.cfg.barriers):
                why = "a cluster barrier's arrive and wait apart (or relaxed): the block's threads are not " \
                      "taken as ordered by it"
            if why and (ins.base in ("call", "brx") or (ins.base, why) not in said):
                said.add((ins.base, why))
                out.append(Issue("not-followed", "warning", f"`{ins.op}`: {why}", at=ins.idx))
        return out

    # -- helpers ------------------------------------------------------------------------------------
    def bfreach(self, idx: int, sem: Optional[Semantics] = None) -> set:
        """Instructions a thread may execute after ``idx`` before its next block barrier; with ``sem``, at its
        block shape (a branch every thread takes one way there, `if (blockDim.x > 32) __syncthreads();`, has
        one side)."""
        dead = sem.dead_edges() if sem is not None else frozenset()
        key = (idx, dead) if dead else idx
        if key not in self._bfreach:
            self._bfreach[key] = self.cfg.barrier_free_reach(self.cfg.block_of[idx], idx, dead)
        return self._bfreach[key]

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
        todo = cfg.other_side(branch_idx, sense)
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

    def inactive_lanes(self, sem: Semantics, block: tuple) -> list:
        out = []
        n = sem.nthreads
        for ins, arg in self.collectives:
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
            named = [j for j in range(32) if mask >> j & 1]
            runs, unknown = sem.guard_mask(ins)
            unknown_v = [u for u in unknown if sem.levels[u[0]] >= VARYING and not keeps_groups(self, sem, ins, u)]
            if unknown_v:
                p, sense, at = unknown_v[0]
                out.append(Issue("inactive-lanes", "error",
                                 f"`{ins.op}` with member mask {mask:#010x} runs under a thread-dependent condition: "
                                 f"lanes of a warp can be on the other side, yet the mask names them (undefined "
                                 f"result; may hang)", at=ins.idx, other=at, other_role="branch"))
                continue
            nwarps = -(-n // 32)
            active = runs.tolist()  # plain bools: a warp's 32 are read one by one
            for w in range(nwarps):
                act = active[w * 32: w * 32 + 32]  # its lanes (fewer in a last partial warp)
                if not any(act):
                    continue
                missing = [j for j in named if j >= len(act)] if len(act) < 32 else []
                if missing and ins.base != "shfl":
                    out.append(Issue("inactive-lanes", "error",
                                     f"`{ins.op}` names lanes {_lanes(missing)} in mask {mask:#010x}, but block "
                                     f"{_shape(block)} has {n} threads: warp {w} has only {len(act)} lanes (the "
                                     f"block size is not a multiple of 32)", at=ins.idx))
                    break
                inactive = [j for j in named if j < len(act) and not act[j]] if not all(act) else []
                if inactive:
                    g = self._worst_guard(sem, ins, VARYING)
                    out.append(Issue("inactive-lanes", "error",
                                     f"`{ins.op}` with member mask {mask:#010x} runs in warp {w} with lanes "
                                     f"{_lanes(inactive)} inactive (they are on the other side of a thread-dependent "
                                     f"condition) although the mask names them (undefined result; may hang)",
                                     at=ins.idx, other=g[1] if g else None, other_role="branch"))
                    break
        # a shuffle naming lanes the block does not have waits for none of them: what matters is whether a
        # value read from one reaches an output (verifier.lint.absent)
        return out + AbsentReads(self, sem).issues()

    # -- 4. cross-block global race -------------------------------------------------------------------------
    def global_races(self, sem: Semantics, facts: EntryFacts) -> list:
        if facts.max_grid_blocks <= 1:
            return []
        out = []
        for ins in self.fn.instrs:
            if ins.parts[0] != "st" or isa.space(ins.parts) not in ("global", "generic"):
                continue
            if self.cfg.block_of[ins.idx] not in self.cfg.reachable:
                continue
            addr = self.values.address(ins.idx, ins.args[0])
            terms, _ = sem.decompose(addr)
            if self.into_shared(addr):
                continue  # a generic store into shared memory (this block's, or the cluster's through mapa)
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


    def into_shared(self, nid: int) -> bool:
        """Whether an address is computed from a shared variable's (``cvta.shared``, ``mapa``, offsets)."""
        nodes, seen, todo = self.values.nodes, set(), [nid]
        while todo:
            node = nodes[todo.pop()]
            if node[0] == "sym" and node[1] in self.shared:
                return True
            if node[0] in ("op", "fn") and len(seen) < 64:
                todo += [a for a in node[2] if a not in seen]
                seen.update(node[2])
        return False


def _lanes(lst) -> str:
    if len(lst) > 6:
        return f"{lst[0]}..{lst[-1]} ({len(lst)} lanes)"
    return ", ".join(map(str, lst))


def _shape(block) -> str:
    return "x".join(str(b) for b in block)
