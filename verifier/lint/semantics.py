"""What is known about the value nodes of verifier.lint.dataflow for one block shape: each value in every
thread (``evaluate``), how far it differs between threads (``level``), what it depends on (``deps``) and its
affine view (``decompose``). See verifier.lint.dataflow for what each means."""
from __future__ import annotations

from typing import Optional

import math

import numpy as np

from verifier.lint import warpsync
from verifier.lint.dataflow import CTAID, DATA, TID, UNIFORM, VARYING, WARP, WARP_OPS, Values, type_bits


class Semantics:
    """Evaluation, levels and dependences of the nodes of ``values`` for one block shape."""

    def __init__(self, values: Values, block: tuple, bind: Optional[dict] = None, free_branches=()):
        self.v = values
        self.bind = bind or {}  # phi node -> its value in one step of a barrier-stepped loop (lint.stepped)
        # the latches of those loops: whether a step runs is the step list's to say, not a guard (their branch,
        # evaluated with this step's values, says whether the *next* step runs)
        self.free_branches = frozenset(free_branches)
        self.block = tuple(int(x) for x in block) + (1,) * (3 - len(block))
        bx, by, bz = self.block
        n = bx * by * bz
        t = np.arange(n, dtype=np.int64)
        self.nthreads = n
        self.env = {"x": t % bx, "y": (t // bx) % by, "z": t // (bx * by), "lane": t % 32, "linear": t}
        self.warp_of = t // 32
        self._eval: dict = {}
        self.branch_pred = {}  # block -> node of the predicate of its conditional branch / ret / exit
        for b in values.cfg.blocks:
            last = values.fn.instrs[b.end - 1]
            if last.pred is not None and last.base in ("bra", "ret", "exit", "trap"):
                self.branch_pred[b.id] = values.pred_value(last)
        nn = len(values.nodes)  # nodes made later (addresses, masks) get their facts from ensure()
        self.levels = [UNIFORM] * nn
        self.deps = [0] * nn
        self.invariant = [True] * nn  # same value for two threads in one barrier interval (if uniform)
        self.sym = [warpsync.FULL] * nn  # lane xor-symmetries of each value (verifier.lint.warpsync)
        self.memo: dict = {}  # verifier.lint.warpsync's per-shape facts of shuffles
        if values.sym_candidates is None:
            values.sym_candidates = warpsync.candidates(values)
        self.block_div = {}  # block -> level of the most varying branch it is control dependent on
        self._dead = None  # dead_edges(), once asked
        self._solve()

    def dead_edges(self) -> frozenset:
        """(block id, edge) of the branches every thread takes one way at this block shape (a condition on
        blockDim, threadIdx and constants alone, exactly evaluated): the other side runs in no thread. A
        barrier-stepped loop's latch is not one (its step list says whether the next step runs)."""
        if self._dead is None:
            dead = set()
            for blk, p in self.branch_pred.items():
                if blk in self.free_branches:
                    continue
                a = self.evaluate(p)
                if a is None or not (a == a[0]).all():
                    continue
                taken = bool(a[0])
                dead.update((blk, e) for _s, e in self.v.cfg.blocks[blk].succs
                            if (e in ("taken", "exit")) != taken)
            self._dead = frozenset(dead)
        return self._dead

    # -- evaluation -----------------------------------------------------------------------------
    def evaluate(self, nid: int) -> Optional[np.ndarray]:
        if nid in self._eval:
            return self._eval[nid]
        node = self.v.nodes[nid]
        kind = node[0]
        out = None
        if nid in self.bind:
            out = np.full(self.nthreads, self.bind[nid], dtype=np.int64)
        elif kind == "c":
            out = np.full(self.nthreads, node[1], dtype=np.int64)
        elif kind == "tid":
            out = self.env[node[1]]
        elif kind == "ntid":
            out = np.full(self.nthreads, self.block["xyz".index(node[1])], dtype=np.int64)
        elif kind == "lane":
            out = self.env["lane"]
        elif kind == "op":
            args = [self.evaluate(a) for a in node[2]]
            if all(a is not None for a in args):
                out = _apply(node[1], args)
        self._eval[nid] = out
        return out

    def level_of_array(self, a: np.ndarray) -> int:
        # ndarray.all() rather than np.all(): the same reduction without the dispatch (asked of every value node)
        if a.size == 0 or (a == a[0]).all():
            return UNIFORM
        pad = (-a.size) % 32
        w = np.concatenate([a, np.repeat(a[-1:], pad)]).reshape(-1, 32) if pad else a.reshape(-1, 32)
        if pad:  # the padding copies the last thread, which is in the last warp: compare real lanes only
            last = a[(a.size // 32) * 32:]
            rest = w[:-1]
            ok = (rest == rest[:, :1]).all() and (last == last[0]).all()
        else:
            ok = (w == w[:, :1]).all()
        return WARP if ok else VARYING

    # -- fixpoint of levels, dependences, invariance ---------------------------------------------
    def _solve(self):
        v = self.v
        cfg = v.cfg
        branch_pred = self.branch_pred
        all_cd = {b.id: cfg.all_cdeps(b.id) for b in cfg.blocks}
        self.all_cd = all_cd
        nodes = v.nodes
        users = self._users()
        L, D, I, S = self.levels, self.deps, self.invariant, self.sym
        facts_of = self._facts
        conds = {b.id: [p for br, _ in all_cd[b.id] if (p := branch_pred.get(br)) is not None] for b in cfg.blocks}
        cond_nodes = set(branch_pred.values())
        div_stale = True  # whether a branch condition's level changed: block_div reads those only
        # Each pass recomputes, in node order, only the nodes an input of which changed since they were last
        # computed: the others would come out the same, so the passes and the result are the full recomputation's.
        dirty = [True] * len(nodes)
        for _ in range(50):
            changed = False
            for nid, node in enumerate(nodes):
                if not dirty[nid]:
                    continue
                dirty[nid] = False
                facts = facts_of(nid, node)
                if facts != (L[nid], D[nid], I[nid], S[nid]):
                    div_stale = div_stale or (L[nid] != facts[0] and nid in cond_nodes)
                    L[nid], D[nid], I[nid], S[nid] = facts
                    changed = True
                    for u in users.get(nid, ()):
                        dirty[u] = True
            div = {b: max([L[p] for p in ps], default=UNIFORM) for b, ps in conds.items()} if div_stale else None
            div_stale = False
            if div is not None and div != self.block_div:
                self.block_div = div
                changed = True
                for p in v.phis:  # a phi's facts read the divergence of its definitions' blocks
                    dirty[p] = True
            if not changed:
                break

    def _users(self) -> dict:
        """node -> the nodes whose facts (``_facts``) read its facts."""
        users: dict = {}
        def_node = self.v.def_node
        for nid, node in enumerate(self.v.nodes):
            kind = node[0]
            if kind in ("op", "fn", "shfl"):
                srcs = node[2]
            elif kind == "ld":
                srcs = (node[2],)
            elif kind == "phi":
                srcs = [d for d in (def_node.get(site) for site in node[2]) if d is not None]
            else:
                continue
            for a in srcs:
                users.setdefault(a, []).append(nid)
        return users

    def _facts(self, nid, node):
        """(level, deps, invariant, xor-symmetries): a value the same in every lane of a warp (all 32
        symmetries, e.g. an xor-butterfly all-reduce) is warp-uniform."""
        lv, dp, inv = self._node_facts(nid, node)
        if lv <= WARP:
            sy = warpsync.FULL
        elif nid not in self.v.sym_candidates or (node[0] == "op" and self.evaluate(nid) is not None):
            sy = warpsync.IDENT  # no shuffle in it, or known per thread (and thread-dependent)
        else:
            sy = warpsync.symmetries(self, nid, node)
        if sy == warpsync.FULL and lv > WARP:
            lv = WARP
        return lv, dp, inv, sy

    def _node_facts(self, nid, node):
        kind = node[0]
        L, D, I = self.levels, self.deps, self.invariant
        if kind == "op":
            a = self.evaluate(nid)
            dp = 0
            inv = True
            for x in node[2]:
                dp |= D[x]
                inv = inv and I[x]
            if a is not None:
                return self.level_of_array(a), dp, inv
            return max([L[x] for x in node[2]]), dp, inv
        if kind == "fn":
            args = node[2]
            if not args:
                return VARYING, DATA, True
            lv, dp, inv = UNIFORM, 0, True  # the most varying, all the dependences, all invariant
            for x in args:
                if L[x] > lv:
                    lv = L[x]
                dp |= D[x]
                if not I[x]:
                    inv = False
            return lv, dp, inv
        if kind in ("c", "f", "ntid", "nctaid", "sym"):
            return UNIFORM, 0, True
        if kind == "ctaid":
            return UNIFORM, CTAID, True
        if kind in ("tid", "lane"):
            return self.level_of_array(self.evaluate(nid)), TID, True
        if kind == "ld":
            space, addr = node[1], node[2]
            if space == "param":
                return UNIFORM, 0, True
            lv = VARYING if space == "local" else L[addr]
            return lv, D[addr] | DATA, I[addr]
        if kind == "shfl":
            return warpsync.shuffle_facts(self, node)
        if kind == "x":
            what = node[1]
            if what in WARP_OPS or (what == "elect" and node[3] == 0):  # the elected lane's id: one per warp
                return WARP, DATA | TID, True
            return VARYING, DATA | TID, True
        if kind == "phi":
            if nid in self.bind:
                return UNIFORM, 0, True
            _, _reg, sites, use_block = node
            lv, dp = UNIFORM, 0
            for (i, k) in sites:
                d = self.v.def_node.get((i, k))
                if d is not None:
                    lv = max(lv, L[d])
                    dp |= D[d]
                lv = max(lv, self.block_div.get(self.v.cfg.block_of[i], UNIFORM))
            return lv, dp, use_block not in self.v.cfg.bf_cyclic
        if kind == "undef":
            return VARYING, DATA, False
        return VARYING, DATA, False

    def ensure(self, nid: int) -> None:
        """Facts for nodes made after the fixpoint (e.g. by ``decompose``): built from existing ones."""
        while len(self.levels) <= nid:
            k = len(self.levels)
            self.levels.append(UNIFORM)
            self.deps.append(0)
            self.invariant.append(True)
            self.sym.append(warpsync.FULL)
            self.levels[k], self.deps[k], self.invariant[k], self.sym[k] = self._facts(k, self.v.nodes[k])

    # -- guards -------------------------------------------------------------------------------------
    def guards(self, instr) -> list:
        """[(predicate node, sense, branch instr idx)]: conditions under which ``instr`` runs (its own
        predicate and the branches it is control dependent on, transitively)."""
        v = self.v
        out = []
        if instr.pred is not None and instr.base not in ("bra",):
            p = v.pred_value(instr)
            self.ensure(p)
            out.append((p, True, instr.idx))
        for br, edge in self.all_cd[v.cfg.block_of[instr.idx]]:
            p = self.branch_pred.get(br)
            if p is None or br in self.free_branches:
                continue
            last = v.cfg.blocks[br].end - 1
            out.append((p, edge in ("taken", "exit"), last))
        return out

    def guard_mask(self, instr) -> tuple:
        """(mask of threads that may run ``instr``, [guards that could not be evaluated])."""
        mask = np.ones(self.nthreads, dtype=bool)
        unknown = []
        for p, sense, at in self.guards(instr):
            self.ensure(p)
            a = self.evaluate(p)
            if a is None:
                unknown.append((p, sense, at))
                continue
            a = a.astype(bool)
            mask &= a if sense else ~a
        return mask, unknown

    # -- affine view --------------------------------------------------------------------------------
    def decompose(self, nid: int):
        """(terms {atom: coeff}, thread part node or None for 0): nid == sum(coeff*atom) + thread part."""
        self.ensure(nid)
        if self.evaluate(nid) is not None:
            return {}, nid
        node = self.v.nodes[nid]
        if node[0] == "op" and node[1] in ("add", "sub"):
            ta, ra = self.decompose(node[2][0])
            tb, rb = self.decompose(node[2][1])
            sgn = 1 if node[1] == "add" else -1
            terms = dict(ta)
            for k, c in tb.items():
                terms[k] = terms.get(k, 0) + sgn * c
            terms = {k: c for k, c in terms.items() if c}
            rest = ra if rb is None else (self.v.mk("op", node[1], (ra if ra is not None else self.v.const(0), rb)))
            if rest is not None:
                self.evaluate(rest)
            return terms, rest
        if node[0] == "op" and node[1] in ("mul", "shl"):
            a, b = node[2]
            for x, y in ((a, b), (b, a)) if node[1] == "mul" else ((a, b),):
                cy = self.evaluate(y)
                if cy is not None and np.all(cy == cy[0]):
                    k = int(cy[0]) if node[1] == "mul" else (1 << int(cy[0]))
                    tx, rx = self.decompose(x)
                    if rx is not None:
                        rx = self.v.mk("op", "mul", (rx, self.v.const(k)))
                        self.evaluate(rx)
                    return {t: c * k for t, c in tx.items()}, rx
        if node[0] == "op" and node[1] == "trunc32u":
            return self.decompose(node[2][0])
        if node[0] == "phi" and (not self.invariant[nid] or self.levels[nid] != UNIFORM) \
                and (iv := self.counter(nid)) is not None:  # a join after a loop: one value per thread
            terms, rest = self.decompose(iv[0])
            atom = self.v.mk("iv", node[1], node[2])  # one atom per induction register, wherever it is read
            self.ensure(atom)
            return {**terms, atom: terms.get(atom, 0) + iv[1]}, rest
        return {nid: 1}, None

    def nonneg(self, nid: int, _busy=None) -> bool:
        """Whether a value is never negative: an induction atom, a constant or per-thread value >= 0, or sums,
        products, shifts, maxima and phis of such (a loop counter counting up from 0); assumed of a phi while it
        is being decided (a cycle of sums of non-negative values stays non-negative)."""
        busy = set() if _busy is None else _busy
        if nid in busy:
            return True
        node = self.v.nodes[nid]
        kind = node[0]
        if kind in ("iv", "ntid", "nctaid", "ctaid", "tid", "lane"):
            return True
        self.ensure(nid)
        a = self.evaluate(nid)
        if a is not None:
            return bool(np.all(a >= 0))
        busy.add(nid)
        if kind == "op" and node[1] in ("add", "mul", "shl", "max.u", "max.s", "trunc32u", "min.s", "min.u"):
            return all(self.nonneg(x, busy) for x in node[2][:1 if node[1] == "shl" else 2])
        if kind == "phi":
            return all(d is not None and self.nonneg(d, busy) for d in (self.v.def_node.get(s) for s in node[2]))
        return False

    def counter(self, nid: int, _busy: frozenset = frozenset()):
        """(initial value node, step) when phi ``nid`` holds ``init + k * step`` (k >= 0 per thread): an induction
        variable, or a join of one's values: nvcc's remainder loop before a 4x-unrolled one leaves its counter as
        the join of ``init`` (loop skipped) and the loop's ``p + 32`` (``for (i = tid; i < n; i += 32)``). Each
        incoming value is ``init`` itself or ``p + c``, ``p`` this phi or such a phi of the same ``init``, every
        step of one sign; ``step`` is their gcd with that sign."""
        if (iv := self.induction(nid)) is not None:
            return iv
        node = self.v.nodes[nid]
        if node[0] != "phi" or nid in _busy or len(_busy) > 8:
            return None
        init, steps, peeled = None, [], []
        for site in node[2]:
            d = self.v.def_node.get(site)
            if d is None:
                return None
            u = self.v.nodes[d]
            if u[0] == "op" and u[1] == "trunc32u":
                u = self.v.nodes[u[2][0]]
            moved = None
            if u[0] == "op" and u[1] == "add":
                for p, c in (u[2], u[2][::-1]):
                    self.ensure(c)
                    k = self.evaluate(c)
                    if k is None or not np.all(k == k[0]) or int(k[0]) == 0:
                        continue
                    if self.v.nodes[p][0] == "phi":
                        moved = p, int(k[0])
                        break
                    # nvcc's peeled remainder iterations before an unrolled loop: ``init + j * step`` straight
                    peeled.append((p, int(k[0])))  # (the join of their counters), checked against init below
                    moved = False
                    break
            if moved is False:
                continue
            if moved is None:  # the value the counter starts from
                if init is not None and d != init:
                    return None
                init = d
                continue
            p, c = moved
            steps.append(c)
            if p != nid:
                sub = self.counter(p, _busy | {nid})
                if sub is None or (init is not None and sub[0] != init):
                    return None
                init = sub[0]
                steps.append(sub[1])
        for base, c in peeled:
            if init is None:
                init = base  # every value past the start: still init + k * step, k >= 0
            if base != init:
                return None
            steps.append(c)
        if init is None or not steps or len({c > 0 for c in steps}) != 1:
            return None
        return init, math.gcd(*[abs(c) for c in steps]) * (1 if steps[0] > 0 else -1)

    def induction(self, nid: int):
        """(initial value node, step) when phi ``nid`` is an induction variable of a loop without a barrier:
        ``p = init; ... p += step`` with a step that is one constant in every thread; else None. Each thread
        may be in another iteration: the atom ``("iv", reg, sites)`` of ``decompose`` stands for "k * step, k >= 0
        per thread"."""
        node = self.v.nodes[nid]
        sites = node[2]
        if len(sites) != 2:
            return None
        defs = [self.v.def_node.get(s) for s in sites]
        for upd, init in (defs, defs[::-1]):
            if upd is None or init is None:
                continue
            u = self.v.nodes[upd]
            if u[0] == "op" and u[1] == "trunc32u":
                u = self.v.nodes[u[2][0]]
            if u[0] != "op" or u[1] != "add":
                continue
            for p, step in (u[2], u[2][::-1]):
                q = self.v.nodes[p]
                if q[0] == "phi" and q[1] == node[1] and q[2] == sites:
                    self.ensure(step)
                    k = self.evaluate(step)
                    if k is not None and np.all(k == k[0]) and int(k[0]) != 0:
                        return init, int(k[0])
        return None


def _apply(name: str, a: list) -> Optional[np.ndarray]:
    x = a[0]
    y = a[1] if len(a) > 1 else None
    with np.errstate(all="ignore"):
        if name == "add":
            return x + y
        if name == "sub":
            return x - y
        if name == "mul":
            return x * y
        if name == "shl":
            return np.left_shift(x, np.clip(y, 0, 63))
        if name.startswith("shr.u"):
            if name == "shr.u64":
                return None if np.any(x < 0) else np.right_shift(x, np.clip(y, 0, 63))
            return np.right_shift(x & ((1 << int(name[5:])) - 1), np.clip(y, 0, 63))
        if name.startswith("shr.s"):
            return np.right_shift(x, np.clip(y, 0, 63))
        if name in ("and", "and.pred"):
            return x & y
        if name in ("or", "or.pred"):
            return x | y
        if name in ("xor", "xor.pred"):
            return x ^ y
        if name == "not.pred":
            return ~x.astype(bool)
        if name == "not":
            return ~x
        if name == "neg":
            return -x
        if name in ("min.s", "min.u"):
            return np.minimum(x, y)
        if name in ("max.s", "max.u"):
            return np.maximum(x, y)
        if name in ("div.s", "div.u"):
            return None if np.any(y == 0) else np.where((x < 0) ^ (y < 0), -(np.abs(x) // np.abs(y)), x // y)
        if name in ("rem.s", "rem.u"):
            return None if np.any(y == 0) else np.sign(x) * (np.abs(x) % np.abs(y))
        if name == "selp":
            return np.where(a[2].astype(bool), x, y)
        if name == "trunc32u":
            return x & 0xFFFFFFFF
        if name.startswith("trunc"):
            bits, sign = int(name[5:-1]), name[-1]
            m = x & ((1 << bits) - 1)
            return np.where(m >= (1 << (bits - 1)), m - (1 << bits), m) if sign == "s" else m
        if name.startswith("setp."):
            _, cmp, typ = name.split(".")
            if typ[0] not in "usb":
                return None
            ops = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
                   "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
            f = ops.get(cmp)
            if f is None:
                return None
            if typ[0] in "ub":
                if type_bits(typ) == 64:
                    if np.any(x < 0) or np.any(y < 0):
                        return None
                else:
                    x, y = x & ((1 << type_bits(typ)) - 1), y & ((1 << type_bits(typ)) - 1)
            elif type_bits(typ) < 64:  # signed: reinterpret the low bits
                m, h = (1 << type_bits(typ)) - 1, 1 << (type_bits(typ) - 1)
                x, y = ((x & m) ^ h) - h, ((y & m) ^ h) - h
            return f(x, y)
    return None
