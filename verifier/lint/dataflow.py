"""What each PTX register holds, as a DAG of value nodes, and what is known about each value.

Each definition of a register gets a node built from its operands' nodes (reaching definitions decide which
definition an operand reads; where several reach, the operand is a ``phi`` node that stands for "one of
them"). On top of the nodes, for one block shape
(verifier.lint.semantics):

- ``evaluate``: the value in every thread of the block as a numpy array, for values computed from
  ``%tid``, ``%laneid``, ``%ntid`` and constants only (exact, not an approximation);
- ``level``: how far a value can differ between threads: UNIFORM (same in the whole block), WARP (same in
  each warp) or VARYING. Thread-only values get their level from the evaluation; loads take the level of
  their address (a load from one address gives every thread the same value); atomic and local results
  are VARYING, shuffles as verifier.lint.warpsync says (a broadcast or an xor-butterfly all-reduce is WARP);
  a ``phi`` is at least as varying as the branches deciding which definition reaches it (sync dependence),
  solved as a fixpoint; a guarded definition is a ``selp`` of the new and the old value;
- ``deps``: whether a value depends on the block index, the thread index, or data loaded from memory;
- ``decompose``: a value as ``sum(coeff * atom) + thread_part``, the affine view used to compare addresses
  of two threads (atoms that are the same in both threads cancel).
"""
from __future__ import annotations

import functools
import re
from typing import Optional

from verifier.lint import isa

UNIFORM, WARP, VARYING = 0, 1, 2
LEVEL_NAMES = {UNIFORM: "uniform", WARP: "warp-uniform", VARYING: "thread-dependent"}
CTAID, TID, DATA = 1, 2, 4

NO_DEF = {"st", "red", "bar", "barrier", "bra", "brx", "ret", "exit", "trap", "membar", "fence", "prefetch",
          "prefetchu", "cp", "call", "pmevent", "nanosleep", "griddepcontrol", "setmaxnreg", "stmatrix",
          "discard", "applypriority", "tensormap", "sust", "sured", "stackrestore"}
_SPECIAL = re.compile(r"^%(tid|ntid|ctaid|nctaid)\.([xyz])$")
_INT = re.compile(r"^-?(0[xX][0-9a-fA-F]+|\d+)U?$")
_ADDR = re.compile(r"^\[\s*([^\]+\s]+)\s*(?:\+\s*(-?\w+))?\s*\]$")
ADDRESS = _ADDR  # an address operand '[base+offset]': its base (group 1) and constant offset (group 2)
WARP_OPS = ("vote", "redux")
_REG = re.compile(r"%[\w$]+")
_DEST_SEP = re.compile(r"[,|]")
_OTHER_SPECIAL = frozenset(("warpid", "nwarpid", "smid", "clock", "clock64", "globaltimer", "lanemask_eq", "lanemask_lt",
                            "lanemask_le", "lanemask_gt", "lanemask_ge", "dynamic_smem_size"))
# special registers that name the block (or its place in the cluster) and the grid's or cluster's shape
_BLOCKLIKE = re.compile(r"^%(cluster_ctarank|cluster_ctaid\.[xyz]|clusterid\.[xyz])$")
_GRIDLIKE = re.compile(r"^%(cluster_nctarank|cluster_nctaid\.[xyz]|nclusterid\.[xyz]|is_explicit_cluster)$")
_FLOAT_LIT = re.compile(r"^0[fFdD][0-9a-fA-F]+$")
_BITS = re.compile(r"(\d+)$")
_INT_TYPE = re.compile(r"^[usb]\d+$")
_NO_DEF_OPS = ("cp.async", "mbarrier.init", "mbarrier.inval", "bar.", "barrier.")
_MODELLED = {"mov", "cvta", "cvt", "add", "sub", "mul", "shl", "shr", "and", "or", "xor", "min", "max", "div", "rem",
             "mad", "not", "neg", "selp", "setp", "ld", "ldu", "shfl", "atom", "activemask", "match", "elect",
             *WARP_OPS}  # the bases Values._modelled builds nodes of


_LITERALS: dict = {}  # operand text -> _literal (constants recur: 0f3F800000, 1, 32)


def _literal(tok: str) -> Optional[tuple]:
    """The node key of an integer literal ('c', value) or a float one ('f', tok), else None."""
    v = 32 if tok == "WARP_SZ" else _int(tok)  # PTX's warpSize (`mov.u32 %r1, WARP_SZ;`): 32 on every NVIDIA GPU
    key = ("c", v) if v is not None else ("f", tok) if _FLOAT_LIT.match(tok) else None
    if len(_LITERALS) > 100_000:
        _LITERALS.clear()
    _LITERALS[tok] = key
    return key


def literal_int(tok: str) -> Optional[int]:
    """The value of an integer literal operand ('-4', '0x1F', '7U'), else None."""
    return _int(tok)


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
    if "," not in a and "|" not in a:
        return [a] if a.startswith("%") else []
    out = []
    for piece in _DEST_SEP.split(a):
        piece = piece.strip()
        if piece.startswith("%"):
            out.append(piece)
    return out


def defs_of(instr) -> list:
    if instr.parts[0] in NO_DEF or not instr.args or instr.op.startswith(_NO_DEF_OPS):
        return []
    return reg_list(instr.args[0])


def uses_of(instr, defs=None) -> list:
    regs = [instr.pred] if instr.pred else []
    defs = defs_of(instr) if defs is None else defs
    if defs and instr.pred and instr.parts[0] != "bra":  # a guarded definition keeps the old value where it does not run
        regs += defs
    for a in instr.args[1 if defs else 0:]:
        read = _READS.get(a)
        regs += _regs_read(a) if read is None else read
    return regs


_READS: dict = {}  # operand text -> the registers it reads (operands repeat: each register is read several times)


def _regs_read(arg: str) -> tuple:
    if len(_READS) > 200_000:
        _READS.clear()
    out = _READS[arg] = tuple(m for m in _REG.findall(arg) if not _SPECIAL.match(m))
    return out


class Values:
    """Value nodes of one function (independent of the block shape)."""

    def __init__(self, fn, cfg, shared_names, decide=None):
        self.fn, self.cfg = fn, cfg
        # decide(values, predicate node) -> its value in every launch, or None (verifier.lint.nulls): a select
        # or guarded definition on a decided predicate is the operand it picks
        self._decide = decide
        self.shared_names = set(shared_names)
        self.nodes: list = []  # id -> (kind, fields...)
        self._operands: dict = {}  # (instr idx, operand text) -> node
        self._intern: dict = {}
        self.def_node: dict = {}  # (instr idx, k) -> node id
        self.defs_by_reg: dict = {}
        self._once: dict = {}  # register defined at one site -> its node, once built (most reads are of these)
        instrs = fn.instrs
        self._defs = defs = [defs_of(ins) for ins in instrs]
        self._uses = [uses_of(ins, d) for ins, d in zip(instrs, defs)]
        for i, d in enumerate(defs):
            for k, r in enumerate(d):
                self.defs_by_reg.setdefault(r, []).append((i, k))
        self._reach = self._reaching()
        self.phis: list = []  # node ids of phi nodes
        self.sym_candidates = None  # nodes computed from a shuffle (verifier.lint.warpsync.candidates), once
        def_node = self.def_node
        for b in self._rpo():
            blk = cfg.blocks[b]
            for i in range(blk.start, blk.end):
                if defs[i] and (i, 0) not in def_node:  # what _define skips, without the call
                    self._define(instrs[i], b)

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
        in_block: dict = {}  # block -> its def sites of those registers, in program order
        for site in sorted(bit):
            in_block.setdefault(cfg.block_of[site[0]], []).append(site)
        gen, kill = {}, {}
        for b in cfg.blocks:
            g = k = 0
            for i, j in in_block.get(b.id, ()):
                r = self._defs[i][j]
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
        reach, decoded = {}, {}  # decoded: bits -> their sites (a register's reads in a block see the same bits)
        defining = {i for i, _ in bit}
        for b in cfg.blocks:
            cur = IN[b.id]
            for i in range(b.start, b.end):
                for r in self._uses[i]:
                    if r in multi:
                        bits = cur & mask[r]
                        got = decoded.get(bits)
                        if got is None:
                            got = decoded[bits] = _sites_of(bits, sites)
                        reach[(i, r)] = got
                if i in defining:
                    for j, r in enumerate(self._defs[i]):
                        if r in multi:
                            cur = (cur & ~mask[r]) | bit[(i, j)]
        return reach

    def def_sites(self, instr_idx: int, reg: str) -> tuple:
        """The definitions (instr idx, k) of ``reg`` that reach its read at instruction ``instr_idx``."""
        ds = self.defs_by_reg.get(reg)
        if not ds:
            return ()
        return tuple(ds) if len(ds) == 1 else tuple(self._reach.get((instr_idx, reg), ()))

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
        nid = self._once.get(tok)
        if nid is not None:  # a register defined at one site (most reads): reg_value's answer, without its calls
            return nid
        key = (instr_idx, tok)
        nid = self._operands.get(key)
        if nid is None:
            nid = self._operands[key] = self._operand(instr_idx, tok.strip())
        return nid

    def _operand(self, instr_idx: int, tok: str) -> int:
        nid = self._once.get(tok)
        if nid is not None:
            return nid
        if tok in self.defs_by_reg:  # a register (every register defined here starts with '%')
            return self.reg_value(instr_idx, tok)
        if tok.startswith("%"):
            if m := _SPECIAL.match(tok):
                return self.mk(m.group(1), m.group(2))
            if _BLOCKLIKE.match(tok):
                return self.mk("ctaid", tok[1:])
            if _GRIDLIKE.match(tok):
                return self.mk("nctaid", tok[1:])
            if tok == "%laneid":
                return self.mk("lane")
            if tok[1:] in _OTHER_SPECIAL:
                return self.mk("x", tok[1:], instr_idx, 0)
            return self.reg_value(instr_idx, tok)
        if tok.startswith("!"):
            return self.mk("op", "not.pred", (self.operand(instr_idx, tok[1:]),))
        key = _LITERALS[tok] if tok in _LITERALS else _literal(tok)
        if key is not None:
            return self.mk(*key)
        if tok.startswith("["):
            return self.address(instr_idx, tok)
        if tok.startswith("{"):  # a vector source: its parts packed ('mov.b64 %rd1, {%r1, %r2}')
            parts = tuple(self.operand(instr_idx, p) for p in tok.strip("{}").split(",") if p.strip() not in ("", "_"))
            return self.mk("fn", "pack", parts, 0)
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
        i = ins.idx
        args = ins.args[1:]
        vals = self._modelled(ins, dests, args) if ins.parts[0] in _MODELLED else None
        if vals is None:  # anything else: an opaque function of its operands
            operands = tuple([self.operand(i, a) for a in args if a.strip()])
            vals = [self.mk("fn", ins.op, operands, k) for k in range(len(dests))]
        for k, r in enumerate(dests):
            v = vals[k] if k < len(vals) else self.mk("x", ins.op, i, k)
            if ins.pred is not None and self._reaches_other(i, r):  # where the guard is false the old value stays
                v = self.select(v, self.reg_value(i, r), self.pred_value(ins))
            self.def_node[(i, k)] = v
            if len(self.defs_by_reg[r]) == 1:
                self._once[r] = v

    def _modelled(self, ins, dests, args) -> Optional[list]:
        """The nodes of the destinations of an instruction the nodes model (None: an opaque function)."""
        p = ins.parts
        base = p[0]
        i = ins.idx

        def opnd(k):
            return self.operand(i, args[k])

        vals = None
        if base == "mov" and len(dests) > 1 and len(args) == 1:  # unpack: 'mov.b64 {%r1, %r2}, %rd1'
            vals = [self.mk("fn", "unpack", (opnd(0),), k) for k in range(len(dests))]
        elif base in ("mov", "cvta", "cvt") and len(args) == 1 and not (base == "cvt" and _is_float_cvt(p)):
            vals = [opnd(0)]
            if base == "cvt" and (narrow := _narrow_bits(p)):
                vals = [self.mk("op", f"trunc{narrow[0]}{narrow[1]}", (vals[0],))]
        elif base in ("add", "sub", "mul", "shl", "shr", "and", "or", "xor", "min", "max", "div", "rem") \
                and len(args) == 2 and not _is_float(p):
            name = base
            if base == "shr":
                name = ("shr.s" if p[-1].startswith("s") else "shr.u") + str(type_bits(p[-1]))
            elif base in ("and", "or", "xor") and p[-1] == "pred":
                name = base + ".pred"
            elif base in ("div", "rem", "min", "max"):
                name = base + (".s" if p[-1].startswith("s") else ".u")
            bits = type_bits(p[-1])
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
            vals = [self.select(opnd(0), opnd(1), opnd(2))]
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
            addr = self.address(i, args[0]) if args else self.mk("x", "ld", i, 0)
            vals = [self.mk("ld", isa.space(p), addr, i, k) for k in range(len(dests))]
        elif base == "shfl" and len(args) == 4:  # value and 'lane in range' predicate of one shuffle
            mode = next((m for m in ("bfly", "idx", "up", "down") if m in p), "?")
            vals = [self.mk("shfl", mode, tuple(opnd(k) for k in range(4)), i, k) for k in _slots(ins, dests)]
        elif base in ("shfl", "atom", "activemask", "match", "elect") or base in WARP_OPS:
            vals = [self.mk("x", base, i, k) for k in _slots(ins, dests)]
        return vals

    def select(self, a: int, b: int, p: int) -> int:
        """``p ? a : b``: one of them where the launches decide p."""
        got = self._decide(self, p) if self._decide is not None else None
        return self.mk("op", "selp", (a, b, p)) if got is None else a if got else b

    def _reaches_other(self, i: int, reg: str) -> bool:
        """Whether a definition of ``reg`` other than instruction ``i``'s own reaches ``i``."""
        return any(site[0] != i for site in self._reach.get((i, reg), ()))

    def pred_value(self, ins) -> Optional[int]:
        """Node of the instruction's guard predicate (negated for @!%p), or None."""
        if ins.pred is None:
            return None
        v = self.reg_value(ins.idx, ins.pred)
        return self.mk("op", "not.pred", (v,)) if ins.pred_neg else v


def _sites_of(bits: int, sites: list) -> frozenset:
    out = []
    while bits:
        low = bits & -bits
        out.append(sites[low.bit_length() - 1])
        bits ^= low
    return frozenset(out)


def _slots(ins, dests) -> list:
    """Which output each destination register is: 0 for d, 1 for p in 'd|p' (also when d is the sink '_')."""
    named = [x.strip() for x in ins.args[0].split("|")] if "|" in ins.args[0] else None
    return [named.index(r) if named and r in named else k for k, r in enumerate(dests)]


@functools.lru_cache(maxsize=1024)  # this and the three below: of a few hundred opcodes, asked thousands of times
def type_bits(t: str) -> int:
    m = _BITS.search(t)
    return int(m.group(1)) if m else 32


@functools.lru_cache(maxsize=1024)
def _is_float(p) -> bool:
    return any(x.startswith(("f16", "f32", "f64", "bf16", "e4m3", "e5m2")) or x in ("rn", "rz", "rm", "rp", "ftz", "approx", "full")
               for x in p[1:])


@functools.lru_cache(maxsize=1024)
def _is_float_cvt(p) -> bool:
    return any(x.startswith(("f", "bf", "e4", "e5")) for x in p[1:])


@functools.lru_cache(maxsize=1024)
def _narrow_bits(p):
    """cvt.u16.u32 -> (16, 'u'): a conversion to a narrower integer type truncates."""
    types = [x for x in p[1:] if _INT_TYPE.match(x)]
    if len(types) == 2 and type_bits(types[0]) < type_bits(types[1]):
        return (type_bits(types[0]), "s" if types[0][0] == "s" else "u")
    return None
