"""What each PTX register holds, as a DAG of value nodes, and what is known about each value.

Each definition of a register gets a node built from its operands' nodes (reaching definitions decide which
definition an operand reads; where several reach, the operand is a ``phi`` node that stands for "one of
them"). On top of the nodes, for one block shape:

- ``evaluate``: the value in every thread of the block as a numpy array, for values computed from
  ``%tid``, ``%laneid``, ``%ntid`` and constants only (exact, not an approximation);
- ``level``: how far a value can differ between threads: UNIFORM (same in the whole block), WARP (same in
  each warp) or VARYING. Thread-only values get their level from the evaluation; loads take the level of
  their address (a load from one address gives every thread the same value); shuffle, atomic and local
  results are VARYING; a ``phi`` is at least as varying as the branches deciding which definition reaches
  it (sync dependence), solved as a fixpoint;
- ``deps``: whether a value depends on the block index, the thread index, or data loaded from memory;
- ``decompose``: a value as ``sum(coeff * atom) + thread_part``, the affine view used to compare addresses
  of two threads (atoms that are the same in both threads cancel).
"""
from __future__ import annotations

import re
from typing import Optional

import numpy as np

UNIFORM, WARP, VARYING = 0, 1, 2
LEVEL_NAMES = {UNIFORM: "uniform", WARP: "warp-uniform", VARYING: "thread-dependent"}
CTAID, TID, DATA = 1, 2, 4

NO_DEF = {"st", "red", "bar", "barrier", "bra", "brx", "ret", "exit", "trap", "membar", "fence", "prefetch",
          "prefetchu", "cp", "call", "pmevent", "nanosleep", "griddepcontrol", "setmaxnreg", "stmatrix",
          "discard", "applypriority", "cp.async", "multimem", "tensormap", "elect"}
_SPECIAL = re.compile(r"^%(tid|ntid|ctaid|nctaid)\.([xyz])$")
_INT = re.compile(r"^-?(0[xX][0-9a-fA-F]+|\d+)U?$")
_ADDR = re.compile(r"^\[\s*([^\]+\s]+)\s*(?:\+\s*(-?\w+))?\s*\]$")
_VARYING_OPS = ("shfl", "atom", "activemask", "match")
_WARP_OPS = ("vote", "redux")


def _int(tok: str) -> Optional[int]:
    if _INT.match(tok):
        t = tok.rstrip("U")
        neg = t.startswith("-")
        v = int(t.lstrip("-"), 0)
        return -v if neg else v
    return None


def reg_list(arg: str) -> list:
    """Registers named by a destination operand: '%r1', '{%f1, %f2}', '%r1|%p2' ('_' sinks dropped)."""
    a = arg.strip().strip("{}")
    out = []
    for piece in re.split(r"[,|]", a):
        piece = piece.strip()
        if piece.startswith("%"):
            out.append(piece)
    return out


def defs_of(instr) -> list:
    base = instr.base
    if base in NO_DEF or instr.op.startswith(("cp.async", "mbarrier.init", "mbarrier.inval", "bar.", "barrier.")):
        return []
    if not instr.args:
        return []
    return reg_list(instr.args[0])


def uses_of(instr) -> list:
    regs = [instr.pred] if instr.pred else []
    start = 0 if not defs_of(instr) else 1
    for a in instr.args[start:]:
        regs += [m for m in re.findall(r"%[\w$]+", a) if not _SPECIAL.match(m)]
    return regs


class Values:
    """Value nodes of one function (independent of the block shape)."""

    def __init__(self, fn, cfg, shared_names):
        self.fn, self.cfg = fn, cfg
        self.shared_names = set(shared_names)
        self.nodes: list = []  # id -> (kind, fields...)
        self._operands: dict = {}  # (instr idx, operand text) -> node
        self._intern: dict = {}
        self.def_node: dict = {}  # (instr idx, k) -> node id
        self.defs_by_reg: dict = {}
        self._defs = [defs_of(ins) for ins in fn.instrs]
        self._uses = [uses_of(ins) for ins in fn.instrs]
        for ins in fn.instrs:
            for k, r in enumerate(self._defs[ins.idx]):
                self.defs_by_reg.setdefault(r, []).append((ins.idx, k))
        self._reach = self._reaching()
        self.phis: list = []  # node ids of phi nodes
        for b in self._rpo():
            blk = cfg.blocks[b]
            for i in range(blk.start, blk.end):
                self._define(fn.instrs[i], b)

    # -- node construction ------------------------------------------------------------------
    def mk(self, *key) -> int:
        nid = self._intern.get(key)
        if nid is None:
            nid = len(self.nodes)
            self.nodes.append(key)
            self._intern[key] = nid
            if key[0] == "phi":
                self.phis.append(nid)
        return nid

    def const(self, v: int) -> int:
        return self.mk("c", int(v))

    def _rpo(self) -> list:
        order, seen = [], set()
        stack = [(0, iter([s for s, _ in self.cfg.blocks[0].succs]))] if self.cfg.blocks else []
        if stack:
            seen.add(0)
        while stack:
            b, it = stack[-1]
            for s in it:
                if s >= 0 and s not in seen:
                    seen.add(s)
                    stack.append((s, iter([t for t, _ in self.cfg.blocks[s].succs])))
                    break
            else:
                order.append(b)
                stack.pop()
        order.reverse()
        return order + [b.id for b in self.cfg.blocks if b.id not in seen]

    def _reaching(self) -> dict:
        """(instr idx, reg) -> frozenset of def sites, for registers defined more than once (reaching
        definitions with one bit per def site of those registers)."""
        multi = {r for r, ds in self.defs_by_reg.items() if len(ds) > 1}
        if not multi:
            return {}
        cfg = self.cfg
        sites, bit, mask = [], {}, {}
        for r in multi:
            m = 0
            for site in self.defs_by_reg[r]:
                bit[site] = 1 << len(sites)
                sites.append(site)
                m |= bit[site]
            mask[r] = m
        gen, kill = {}, {}
        for b in cfg.blocks:
            g = k = 0
            for i in range(b.start, b.end):
                for j, r in enumerate(self._defs[i]):
                    if r in multi:
                        g = (g & ~mask[r]) | bit[(i, j)]
                        k |= mask[r]
            gen[b.id], kill[b.id] = g, k
        IN = {b.id: 0 for b in cfg.blocks}
        OUT = {b.id: gen[b.id] for b in cfg.blocks}
        order = self._rpo()
        changed = True
        while changed:
            changed = False
            for b in order:
                new = 0
                for p in cfg.blocks[b].preds:
                    new |= OUT[p]
                if new != IN[b]:
                    IN[b] = new
                    OUT[b] = gen[b] | (new & ~kill[b])
                    changed = True
        reach = {}
        for b in cfg.blocks:
            cur = IN[b.id]
            for i in range(b.start, b.end):
                for r in self._uses[i]:
                    if r in multi:
                        bits, out = cur & mask[r], []
                        while bits:
                            low = bits & -bits
                            out.append(sites[low.bit_length() - 1])
                            bits ^= low
                        reach[(i, r)] = frozenset(out)
                for j, r in enumerate(self._defs[i]):
                    if r in multi:
                        cur = (cur & ~mask[r]) | bit[(i, j)]
        return reach

    def reg_value(self, instr_idx: int, reg: str) -> int:
        ds = self.defs_by_reg.get(reg)
        if not ds:
            return self.mk("undef", reg)
        if len(ds) == 1:
            return self._def_value(ds[0])
        sites = self._reach.get((instr_idx, reg), frozenset())
        if not sites:
            return self.mk("undef", reg)
        if len(sites) == 1:
            return self._def_value(next(iter(sites)))
        return self.mk("phi", reg, sites, self.cfg.block_of[instr_idx])

    def _def_value(self, site) -> int:
        if site not in self.def_node:
            i, _ = site
            self._define(self.fn.instrs[i], self.cfg.block_of[i])
        return self.def_node[site]

    def operand(self, instr_idx: int, tok: str) -> int:
        key = (instr_idx, tok)
        nid = self._operands.get(key)
        if nid is None:
            nid = self._operands[key] = self._operand(instr_idx, tok.strip())
        return nid

    def _operand(self, instr_idx: int, tok: str) -> int:
        if tok.startswith("!"):
            return self.mk("op", "not.pred", (self.operand(instr_idx, tok[1:]),))
        if m := _SPECIAL.match(tok):
            return self.mk(m.group(1), m.group(2))
        if tok in ("%laneid",):
            return self.mk("lane")
        if tok.startswith("%") and tok[1:] in ("warpid", "nwarpid", "smid", "clock", "clock64", "globaltimer",
                                                "lanemask_eq", "lanemask_lt", "lanemask_le", "lanemask_gt",
                                                "lanemask_ge", "dynamic_smem_size"):
            return self.mk("x", tok[1:], instr_idx, 0)
        if tok.startswith("%"):
            return self.reg_value(instr_idx, tok)
        v = _int(tok)
        if v is not None:
            return self.const(v)
        if re.match(r"^0[fFdD][0-9a-fA-F]+$", tok):
            return self.mk("f", tok)
        if tok.startswith("["):
            return self.address(instr_idx, tok)
        return self.mk("sym", tok)

    def address(self, instr_idx: int, tok: str) -> int:
        m = _ADDR.match(tok.strip())
        if m is None:
            return self.mk("x", "address", instr_idx, tok)
        base = self.operand(instr_idx, m.group(1))
        off = _int(m.group(2)) if m.group(2) else 0
        return base if not off else self.mk("op", "add", (base, self.const(off)))

    # -- one instruction ----------------------------------------------------------------------
    def _define(self, ins, block: int) -> None:
        dests = self._defs[ins.idx]
        if not dests or (ins.idx, 0) in self.def_node:
            return
        p = ins.parts
        base = p[0]
        i = ins.idx
        args = ins.args[1:]

        def opnd(k):
            return self.operand(i, args[k])

        vals = None
        if base in ("mov", "cvta", "cvt") and len(args) == 1 and not (base == "cvt" and _is_float_cvt(p)):
            vals = [opnd(0)]
            if base == "cvt" and (narrow := _narrow_bits(p)):
                vals = [self.mk("op", f"trunc{narrow[0]}{narrow[1]}", (vals[0],))]
        elif base in ("add", "sub", "mul", "shl", "shr", "and", "or", "xor", "min", "max", "div", "rem") \
                and len(args) == 2 and not _is_float(p):
            name = base
            if base == "shr":
                name = ("shr.s" if p[-1].startswith("s") else "shr.u") + str(_bits(p[-1]))
            elif base in ("and", "or", "xor") and p[-1] == "pred":
                name = base + ".pred"
            elif base in ("div", "rem", "min", "max"):
                name = base + (".s" if p[-1].startswith("s") else ".u")
            bits = _bits(p[-1])
            node = self.mk("op", name, (opnd(0), opnd(1)))
            if bits == 32 and base in ("shl", "and", "or", "xor", "add", "sub", "mul") \
                    and p[-1].startswith(("u", "b")) and "wide" not in p:
                node = self.mk("op", "trunc32u", (node,))
            vals = [node]
        elif base == "mad" and len(args) == 3 and not _is_float(p):
            vals = [self.mk("op", "add", (self.mk("op", "mul", (opnd(0), opnd(1))), opnd(2)))]
        elif base in ("not", "neg") and len(args) == 1 and not _is_float(p):
            vals = [self.mk("op", base + (".pred" if p[-1] == "pred" else ""), (opnd(0),))]
        elif base == "selp" and len(args) == 3:
            vals = [self.mk("op", "selp", (opnd(0), opnd(1), opnd(2)))]
        elif base == "setp" and len(args) == 2:
            cmp, typ = p[1], p[-1]
            if len(p) == 3:
                vals = [self.mk("op", f"setp.{cmp}.{typ}", (opnd(0), opnd(1)))]
                if len(dests) == 2:
                    vals.append(self.mk("op", "not.pred", (vals[0],)))
        elif base == "setp" and len(args) == 3 and len(p) == 4 and p[2] in ("and", "or", "xor"):
            c = self.mk("op", f"setp.{p[1]}.{p[-1]}", (opnd(0), opnd(1)))
            vals = [self.mk("op", p[2] + ".pred", (c, opnd(2)))]
        elif base == "ld" or base == "ldu":
            space = next((s for s in p[1:] if s in ("global", "shared", "local", "param", "const")), "generic")
            addr = self.address(i, args[0]) if args else self.mk("x", "ld", i, 0)
            vals = [self.mk("ld", space, addr, i, k) for k in range(len(dests))]
        elif base == "shfl" or base == "atom" or base == "activemask" or base == "match":
            vals = [self.mk("x", base, i, k) for k in range(len(dests))]
        elif base in _WARP_OPS:
            vals = [self.mk("x", base, i, k) for k in range(len(dests))]
        if vals is None:  # anything else: an opaque function of its operands
            operands = tuple(self.operand(i, a) for a in args if not a.startswith("{") and a.strip())
            vals = [self.mk("fn", ins.op, operands, k) for k in range(len(dests))]
        for k in range(len(dests)):
            self.def_node[(i, k)] = vals[k] if k < len(vals) else self.mk("x", ins.op, i, k)

    def pred_value(self, ins) -> Optional[int]:
        """Node of the instruction's guard predicate (negated for @!%p), or None."""
        if ins.pred is None:
            return None
        v = self.reg_value(ins.idx, ins.pred)
        return self.mk("op", "not.pred", (v,)) if ins.pred_neg else v


def _bits(t: str) -> int:
    m = re.search(r"(\d+)$", t)
    return int(m.group(1)) if m else 32


def _is_float(p) -> bool:
    return any(x.startswith(("f16", "f32", "f64", "bf16", "e4m3", "e5m2")) or x in ("rn", "rz", "rm", "rp", "ftz", "approx", "full")
               for x in p[1:])


def _is_float_cvt(p) -> bool:
    return any(x.startswith(("f", "bf", "e4", "e5")) for x in p[1:])


def _narrow_bits(p):
    """cvt.u16.u32 -> (16, 'u'): a conversion to a narrower integer type truncates."""
    types = [x for x in p[1:] if re.match(r"^[usb]\d+$", x)]
    if len(types) == 2 and _bits(types[0]) < _bits(types[1]):
        return (_bits(types[0]), "s" if types[0][0] == "s" else "u")
    return None


class Semantics:
    """Evaluation, levels and dependences of the nodes of ``values`` for one block shape."""

    def __init__(self, values: Values, block: tuple):
        self.v = values
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
        self.block_div = {}  # block -> level of the most varying branch it is control dependent on
        self._solve()

    # -- evaluation -----------------------------------------------------------------------------
    def evaluate(self, nid: int) -> Optional[np.ndarray]:
        if nid in self._eval:
            return self._eval[nid]
        node = self.v.nodes[nid]
        kind = node[0]
        out = None
        if kind == "c":
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
        if a.size == 0 or np.all(a == a[0]):
            return UNIFORM
        pad = (-a.size) % 32
        w = np.concatenate([a, np.repeat(a[-1:], pad)]).reshape(-1, 32) if pad else a.reshape(-1, 32)
        if pad:  # the padding copies the last thread, which is in the last warp: compare real lanes only
            last = a[(a.size // 32) * 32:]
            rest = w[:-1]
            ok = np.all(rest == rest[:, :1]) and np.all(last == last[0])
        else:
            ok = np.all(w == w[:, :1])
        return WARP if ok else VARYING

    # -- fixpoint of levels, dependences, invariance ---------------------------------------------
    def _solve(self):
        v = self.v
        cfg = v.cfg
        branch_pred = self.branch_pred
        all_cd = {b.id: cfg.all_cdeps(b.id) for b in cfg.blocks}
        self.all_cd = all_cd
        for _ in range(50):
            changed = False
            for nid, node in enumerate(v.nodes):
                lv, dp, inv = self._node_facts(nid, node)
                if (lv, dp, inv) != (self.levels[nid], self.deps[nid], self.invariant[nid]):
                    self.levels[nid], self.deps[nid], self.invariant[nid] = lv, dp, inv
                    changed = True
            div = {}
            for b in cfg.blocks:
                lv = UNIFORM
                for br, _ in all_cd[b.id]:
                    p = branch_pred.get(br)
                    if p is not None:
                        lv = max(lv, self.levels[p])
                div[b.id] = lv
            if div != self.block_div:
                self.block_div = div
                changed = True
            if not changed:
                break

    def _node_facts(self, nid, node):
        kind = node[0]
        L, D, I = self.levels, self.deps, self.invariant
        if kind in ("c", "f", "ntid", "nctaid", "sym"):
            return UNIFORM, 0, True
        if kind == "ctaid":
            return UNIFORM, CTAID, True
        if kind in ("tid", "lane"):
            return self.level_of_array(self.evaluate(nid)), TID, True
        if kind == "op":
            a = self.evaluate(nid)
            dp = 0
            inv = True
            for x in node[2]:
                dp |= D[x]
                inv = inv and I[x]
            if a is not None:
                return self.level_of_array(a), dp, inv
            return max(L[x] for x in node[2]), dp, inv
        if kind == "fn":
            args = node[2]
            if not args:
                return VARYING, DATA, True
            return max(L[x] for x in args), (0 if not args else _or(D[x] for x in args)), all(I[x] for x in args)
        if kind == "ld":
            space, addr = node[1], node[2]
            if space == "param":
                return UNIFORM, 0, True
            lv = VARYING if space == "local" else L[addr]
            return lv, D[addr] | DATA, I[addr]
        if kind == "x":
            what = node[1]
            if what in _WARP_OPS:
                return WARP, DATA | TID, True
            return VARYING, DATA | TID, True
        if kind == "phi":
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
            self.levels[k], self.deps[k], self.invariant[k] = self._node_facts(k, self.v.nodes[k])

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
            if p is None:
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
        return {nid: 1}, None


def _or(it):
    out = 0
    for x in it:
        out |= x
    return out


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
                if _bits(typ) == 64:
                    if np.any(x < 0) or np.any(y < 0):
                        return None
                else:
                    x, y = x & ((1 << _bits(typ)) - 1), y & ((1 << _bits(typ)) - 1)
            elif _bits(typ) < 64:  # signed: reinterpret the low bits
                m, h = (1 << _bits(typ)) - 1, 1 << (_bits(typ) - 1)
                x, y = ((x & m) ^ h) - h, ((y & m) ^ h) - h
            return f(x, y)
    return None
