"""Control-flow graph of one PTX function: basic blocks, post-dominators, control dependence, and the
barrier-free cycles (loops a thread can go round without passing a block barrier).

Blocks are split before every block barrier, so a barrier is always the first instruction of its block.
"""
from __future__ import annotations

from dataclasses import dataclass, field

BARRIER_OPS = ("bar.sync", "barrier.sync", "bar.red", "barrier.red", "barrier.sync.aligned", "bar.cta.sync")
EXIT_OPS = ("ret", "exit", "trap")
EXIT = -1  # the virtual exit node
_BRANCHES = ("bra", "ret", "exit", "trap", "brx")  # the instructions that end a block


def is_block_barrier(op: str) -> bool:
    parts = op.split(".")
    return parts[0] in ("bar", "barrier") and len(parts) > 1 and parts[1] in ("sync", "red", "cta") \
        and "warp" not in parts and "arrive" not in parts


def block_barriers(instrs) -> set:
    """Indices of the instructions that are a barrier of the whole block: ``bar.sync`` and its kin, and a
    cluster barrier (``barrier.cluster.arrive`` right before ``barrier.cluster.wait``: every thread of the
    cluster, this block's included, arrives before any leaves). A cluster arrive and wait apart are not one."""
    out = set()
    for i, x in enumerate(instrs):
        if x.parts[0] not in ("bar", "barrier"):
            continue
        if is_block_barrier(x.op):
            out.add(i)
        elif x.op.startswith("barrier.cluster.arrive") and "relaxed" not in x.parts and i + 1 < len(instrs) \
                and instrs[i + 1].op.startswith("barrier.cluster.wait") and x.pred is None:
            out.add(i)
    return out


@dataclass
class Block:
    id: int
    start: int  # first instruction index
    end: int  # one past the last
    succs: list = field(default_factory=list)  # (block id or EXIT, edge): edge 'taken', 'fall' or 'jump'
    preds: list = field(default_factory=list)

    @property
    def barrier(self) -> bool:
        return False  # filled by CFG (needs the instructions)


class CFG:
    """``decided``: {instruction index: whether it runs} for guarded instructions whose predicate is the same in
    every launch the spec makes (verifier.lint.nulls: a null pointer argument tested against 0). A decided branch
    (or ret/exit) keeps only the edge it takes; a guarded instruction that never runs is a block of its own that
    nothing enters; every block no path reaches then loses its edges (its definitions reach nothing)."""

    def __init__(self, fn, decided=None):
        self.fn = fn
        ins = fn.instrs
        decided = decided or {}
        self.barriers = block_barriers(ins)
        never = {i for i, runs in decided.items() if not runs and i > 0 and ins[i].parts[0] not in _BRANCHES}
        starts = {0} | set(fn.labels.values()) | self.barriers | never | {i + 1 for i in never}
        for i, x in enumerate(ins):
            if x.parts[0] in _BRANCHES:
                starts.add(i + 1)
        starts = sorted(s for s in starts if s < len(ins))
        self.blocks = [Block(id=k, start=s, end=(starts[k + 1] if k + 1 < len(starts) else len(ins)))
                       for k, s in enumerate(starts)]
        self.block_of = {}
        for b in self.blocks:
            self.block_of.update(dict.fromkeys(range(b.start, b.end), b.id))
        by_start = {b.start: b.id for b in self.blocks}
        label_block = {lab: by_start.get(i) for lab, i in fn.labels.items()}
        for b in self.blocks:
            last = ins[b.end - 1]
            nxt = b.id + 1 if b.id + 1 < len(self.blocks) else EXIT
            runs = decided.get(b.end - 1)  # None: not decided (or not guarded)
            if last.base == "bra":
                target = label_block.get(last.args[0])
                if runs is not False:
                    b.succs.append((target if target is not None else EXIT, "taken"))
                if last.pred is not None and runs is not True:
                    b.succs.append((nxt, "fall"))
            elif last.base in EXIT_OPS:
                if last.pred is not None and runs is not True:  # a predicated ret/exit falls through for the others
                    b.succs.append((nxt, "fall"))
                if runs is not False:
                    b.succs.append((EXIT, "exit"))
            else:
                b.succs.append((nxt, "fall"))
        aborts = self._drop_aborts(ins)
        if decided or aborts:
            self._prune({self.block_of[i] for i in never})
        for b in self.blocks:
            for s, e in b.succs:
                if s != EXIT:
                    self.blocks[s].preds.append(b.id)
        self.barrier_block = [b.start in self.barriers for b in self.blocks]
        self.reachable = self._reachable()
        self.ipdom = self._postdominators()
        self.cdeps = self._control_dependence()
        self.bf_cyclic = self._barrier_free_cycles()

    def _drop_aborts(self, ins) -> set:
        """Paths into a ``trap`` are not followed: a trap aborts the whole grid (cooperative groups' invalid-grid
        check, ``__trap()``, an assert), so no thread is left waiting at a barrier and nothing after it runs. The
        blocks ending in an unguarded trap lose the edges into them (a guarded trap its exit edge), unless that
        leaves a block with no way out. Returns the abort blocks."""
        aborts = {b.id for b in self.blocks
                  if b.id != 0 and ins[b.end - 1].base == "trap" and ins[b.end - 1].pred is None}
        for b in self.blocks:
            last = ins[b.end - 1]
            if last.base == "trap" and last.pred is not None and len(b.succs) > 1:
                b.succs = [(s, e) for s, e in b.succs if e != "exit"]
            kept = [(s, e) for s, e in b.succs if s not in aborts]
            if kept and len(kept) < len(b.succs):
                b.succs = kept
        return aborts

    def _prune(self, never: set) -> None:
        """Edges into a block of an instruction that never runs go past it; then the blocks no path from the
        entry reaches lose their edges."""
        nxt = {k: self.blocks[k].succs[0][0] for k in never}  # each falls through to the next block

        def past(k):
            while k in never:
                k = nxt[k]
            return k

        for b in self.blocks:
            b.succs = [] if b.id in never else [(past(s), e) for s, e in b.succs]
        live = self._reachable()
        for b in self.blocks:
            if b.id not in live:
                b.succs = []

    def _reachable(self) -> set:
        seen, todo = {0}, [0]
        while todo:
            b = todo.pop()
            for s, _ in self.blocks[b].succs:
                if s != EXIT and s not in seen:
                    seen.add(s)
                    todo.append(s)
        return seen

    def _postdominators(self) -> dict:
        """Immediate post-dominator of each block (EXIT for blocks whose paths end at once), computed with
        the iterative algorithm of Cooper, Harvey and Kennedy on the reverse graph."""
        # reverse post-order of the reverse CFG, from EXIT
        rpreds = {b.id: [s for s, _ in b.succs] for b in self.blocks}
        exits_into = [b.id for b in self.blocks if any(s == EXIT for s, _ in b.succs)]
        order, seen = [], {EXIT}
        rsucc = {EXIT: exits_into}
        for b in self.blocks:
            for s, _ in b.succs:
                if s != EXIT:
                    rsucc.setdefault(s, []).append(b.id)
        stack = [(EXIT, iter(rsucc.get(EXIT, [])))]
        while stack:
            node, it = stack[-1]
            for n in it:
                if n not in seen:
                    seen.add(n)
                    stack.append((n, iter(rsucc.get(n, []))))
                    break
            else:
                order.append(node)
                stack.pop()
        order.reverse()
        num = {n: i for i, n in enumerate(order)}
        ipdom = {EXIT: EXIT}

        def intersect(a, b):
            while a != b:
                while num[a] > num[b]:
                    a = ipdom[a]
                while num[b] > num[a]:
                    b = ipdom[b]
            return a

        changed = True
        while changed:
            changed = False
            for n in order[1:]:
                cands = [p for p in rpreds[n] if p in ipdom]
                if not cands:
                    continue
                new = cands[0]
                for p in cands[1:]:
                    new = intersect(p, new)
                if ipdom.get(n) != new:
                    ipdom[n] = new
                    changed = True
        # blocks that cannot reach EXIT (infinite loops) post-dominate nothing useful
        for b in self.blocks:
            ipdom.setdefault(b.id, EXIT)
        return ipdom

    def _control_dependence(self) -> dict:
        """block -> [(branch block, edge kind)]: the branches deciding whether the block runs."""
        cd: dict = {b.id: [] for b in self.blocks}
        for b in self.blocks:
            if len(b.succs) < 2:
                continue
            stop = self.ipdom[b.id]
            for s, edge in b.succs:
                runner = s
                while runner != stop and runner != EXIT:
                    if (b.id, edge) not in cd[runner]:
                        cd[runner].append((b.id, edge))
                    runner = self.ipdom[runner]
        return cd

    def other_side(self, branch_idx: int, sense: bool) -> list:
        """The blocks that begin the side of the branch at instruction ``branch_idx`` NOT taken when its predicate
        reads ``sense`` (where the threads a guard leaves out go): the walks of verifier.lint.checks (an early
        exit before a barrier) and verifier.lint.lanegroups (lanes leaving for good) start here."""
        want = ("fall", "exit") if sense else ("taken",)
        return [s for s, e in self.blocks[self.block_of[branch_idx]].succs if e in want]

    def all_cdeps(self, block: int) -> list:
        """Transitive control dependences of ``block``: [(branch block, edge)], nearest first."""
        out, seen, todo = [], {block}, [block]
        while todo:
            b = todo.pop(0)
            for br, edge in self.cdeps[b]:
                if (br, edge) not in out:
                    out.append((br, edge))
                if br not in seen:
                    seen.add(br)
                    todo.append(br)
        return out

    def _barrier_free_cycles(self) -> set:
        """Blocks on a cycle that passes no block barrier (Tarjan's SCC on edges into non-barrier blocks)."""
        succ = {b.id: [s for s, _ in b.succs if s != EXIT and not self.barrier_block[s]] for b in self.blocks}
        index, low, on, stack, out = {}, {}, set(), [], set()
        counter = [0]
        for root in succ:
            if root in index:
                continue
            work = [(root, iter(succ[root]))]
            index[root] = low[root] = counter[0]
            counter[0] += 1
            stack.append(root)
            on.add(root)
            while work:
                v, it = work[-1]
                for w in it:
                    if w not in index:
                        index[w] = low[w] = counter[0]
                        counter[0] += 1
                        stack.append(w)
                        on.add(w)
                        work.append((w, iter(succ[w])))
                        break
                    if w in on:
                        low[v] = min(low[v], index[w])
                else:
                    work.pop()
                    if work:
                        low[work[-1][0]] = min(low[work[-1][0]], low[v])
                    if low[v] == index[v]:
                        comp = []
                        while True:
                            w = stack.pop()
                            on.discard(w)
                            comp.append(w)
                            if w == v:
                                break
                        if len(comp) > 1 or v in succ[v]:
                            out.update(comp)
        return out

    def barrier_free_reach(self, start_block: int, start_instr: int, dead: frozenset = frozenset()) -> set:
        """Instruction indices a thread can execute after ``start_instr`` (exclusive) before its next block
        barrier, following control flow from inside ``start_block``; ``dead``: (block id, edge) pairs no thread
        takes (a branch on the block shape, verifier.lint.semantics.Semantics.dead_edges)."""
        b = self.blocks[start_block]
        out = set(range(start_instr + 1, b.end))
        seen, todo = set(), [s for s, e in b.succs if s != EXIT and (b.id, e) not in dead]
        while todo:
            k = todo.pop()
            if k in seen or self.barrier_block[k]:
                continue
            seen.add(k)
            blk = self.blocks[k]
            out.update(range(blk.start, blk.end))
            todo.extend(s for s, e in blk.succs if s != EXIT and (k, e) not in dead)
        return out
