"""offset-wrap (issue #36): a global-memory address that adds a 32-bit offset formed from the row (``%ctaid``, or a
loop counter over rows) times a run-time parameter (a row count, length or stride), widened to 64 bits only after
the product: ``x + (int)(blockIdx.x * N)`` wraps past 2^31 elements (2^32 when the product is unsigned), and a 64-bit
stride narrowed to 32 bits before ``(long long)row * stride`` wraps at a stride of 2^31.

How: each global (or generic, not shared) ld/st/atom/red/cp.async address is followed back through its 64-bit
arithmetic (add, mul, shl, mov, cvta, selp, loop phis) to the places a 32-bit value enters it: ``cvt.s64.s32`` /
``cvt.u64.u32`` of a 32-bit register, the operands of ``mul.wide`` / ``mad.wide`` (*widenings*), and a
``cvt.s64.s32`` of a 64-bit register (a *narrowing*: its low 32 bits, sign-extended). A widening whose 32-bit value
holds a product (``mul.lo``, ``mad.lo``, ``shl``) of a row term and a kernel parameter, or a narrowing of a kernel
parameter that the 64-bit path multiplies by a row term, is a candidate. Its value as the program means it (no
wrap) is bounded by interval arithmetic at each large shape the spec supports (verifier.lint.large: the grid,
block and argument values of those launches; loop counters by their loop's bound): past the 32-bit range there is
a wrap at a shape the spec accepts (error); within it at every such shape, none (no issue); a value it cannot
bound (data, a loop without a readable bound) is a warning naming it; a spec that refuses every large shape has
declared the limit (info)."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Optional

from verifier.lint import isa
from verifier.lint.dataflow import ADDRESS, literal_int
from verifier.lint.issues import Issue
from verifier.lint.ranges import Bounds, Counters, param_slot, sum_leaves

_INT_TYPE = re.compile(r"^[usb](8|16|32|64)$")
_NVCC_REG = re.compile(r"^%(rd|r|rs)\d+$")
_REG_BITS = {"rd": 64, "r": 32, "rs": 16}
_MEMORY = ("ld", "ldu", "st", "atom", "red", "cp")
_DIMS = ("x", "y", "z")
_SPECIAL_NAMES = {"ctaid": "blockIdx", "nctaid": "gridDim", "tid": "threadIdx", "ntid": "blockDim"}
FIX = "form it in 64 bits: (int64_t)row * stride (or size_t), and keep 64-bit strides in 64 bits"


@dataclass(frozen=True)
class Point:
    """Where a 32-bit value enters a 64-bit address."""

    at: int  # the widening / narrowing instruction
    value: int  # node of the value, as the program means it (no wrap)
    bits: int  # 31: sign-extended (wraps at 2^31), 32: zero-extended (at 2^32)
    narrowing: bool  # a 64-bit value cut to 32 bits (else a 32-bit value widened)
    row: bool  # the 64-bit path multiplies it by a row term
    scale: Optional[int]  # bytes per unit of the value (constant factors after it), None when not constant


class OffsetCheck:
    """The offset-wrap check of one entry (its value nodes: verifier.lint.dataflow)."""

    def __init__(self, analysis):
        self.a = analysis
        self.values = analysis.values
        self.fn = analysis.fn
        self.params = {name: k for k, name in enumerate(self.fn.params)}
        self._row: dict = {}
        self._param: dict = {}
        self._producer: Optional[dict] = None
        self.counters = Counters(self.values)

    # -- the 64-bit address, back to its 32-bit parts ----------------------------------------------------
    def accesses(self):
        """(instruction, address register) of each global or generic access (not into shared memory)."""
        cfg = self.a.cfg
        for ins in self.fn.instrs:
            base = ins.parts[0]
            if base not in _MEMORY or cfg.block_of[ins.idx] not in cfg.reachable:
                continue
            if base == "cp" and not ins.op.startswith("cp.async") or ins.op.startswith("cp.async.bulk"):
                continue
            sp = isa.space(ins.parts)
            if base == "cp":
                sp = "global"  # cp.async's source is global: [dst] shared, [src] global
            if sp not in ("global", "generic"):
                continue
            addrs = [a for a in ins.args if a.strip().startswith("[")]
            if base == "cp":
                addrs = addrs[1:2]
            for tok in addrs[:1]:
                m = ADDRESS.match(tok.strip())
                if m and m.group(1).startswith("%"):
                    if sp == "generic" and self.a.into_shared(self.values.operand(ins.idx, m.group(1))):
                        continue
                    yield ins, m.group(1)

    def points(self, ins, reg: str) -> list:
        """The 32-bit values that enter the address register ``reg`` read at ``ins``."""
        out, seen = [], set()
        todo = [(ins.idx, reg, 1, False)]
        v = self.values
        instrs = self.fn.instrs
        while todo:
            at, r, scale, row = todo.pop()
            for site in v.def_sites(at, r):
                key = (site, scale is not None, row)
                if key in seen or len(seen) > 2000:
                    continue
                seen.add(key)
                d = instrs[site[0]]
                out += self._through(d, scale, row, todo)
        return out

    def _through(self, d, scale, row, todo) -> list:
        """Follow one definition of a 64-bit address part: its 64-bit operands onto ``todo``, its 32-bit ones
        returned as Points."""
        p, args, i = d.parts, d.args[1:], d.idx
        base = p[0]
        types = [x for x in p[1:] if _INT_TYPE.match(x)]
        regs = [a.strip() for a in args]
        if base in ("mov", "cvta") and len(regs) == 1 and regs[0].startswith("%"):
            todo.append((i, regs[0], scale, row))
        elif base in ("add", "sub", "and", "or") and types and types[-1].endswith("64"):
            todo += [(i, r, scale, row) for r in regs if r.startswith("%")]
        elif base == "selp" and len(regs) == 3:
            todo += [(i, r, scale, row) for r in regs[:2] if r.startswith("%")]
        elif base in ("mul", "shl") and "wide" not in p and types and types[-1].endswith("64") and len(regs) == 2:
            for x, y in ((0, 1), (1, 0)) if base == "mul" else ((0, 1),):
                if not regs[x].startswith("%"):
                    continue
                k = _literal(regs[y])
                s = None if k is None or scale is None else scale * (k if base == "mul" else 1 << k)
                todo.append((i, regs[x], s, row or (k is None and self.row_like(self.values.operand(i, regs[y])))))
        elif base == "mad" and "lo" in p and types and types[-1].endswith("64") and len(regs) == 3:
            for x, y in ((0, 1), (1, 0)):
                if regs[x].startswith("%"):
                    todo.append((i, regs[x], None, row or self.row_like(self.values.operand(i, regs[y]))))
            if regs[2].startswith("%"):
                todo.append((i, regs[2], scale, row))
        elif base in ("mul", "mad") and "wide" in p and len(regs) >= 2:
            bits = 31 if types and types[-1].startswith("s") else 32
            pts = []
            for x, y in ((0, 1), (1, 0)):
                if not regs[x].startswith("%"):
                    continue
                k = _literal(regs[y])
                s = None if k is None or scale is None else scale * k
                scaled_by_row = row or (k is None and self.row_like(self.values.operand(i, regs[y])))
                pts.append(Point(i, self.values.operand(i, regs[x]), bits, False, scaled_by_row, s))
            if base == "mad" and len(regs) == 3 and regs[2].startswith("%"):
                todo.append((i, regs[2], scale, row))
            return pts
        elif base == "cvt" and len(types) == 2 and len(regs) == 1 and regs[0].startswith("%"):
            dst, src = types
            if _bits(dst) == 64 and _bits(src) == 64:
                todo.append((i, regs[0], scale, row))
            elif _bits(dst) == 64 and _bits(src) == 32:
                wide = self.reg_bits(i, regs[0]) == 64
                return [Point(i, self.values.operand(i, regs[0]), 31 if src.startswith("s") else 32, wide, row, scale)]
        return []

    def reg_bits(self, at: int, reg: str) -> Optional[int]:
        m = _NVCC_REG.match(reg)
        if m:
            return _REG_BITS[m.group(1)]
        for j, _k in self.values.def_sites(at, reg):
            types = [x for x in self.fn.instrs[j].parts[1:] if _INT_TYPE.match(x)]
            if types:
                return _bits(types[0])
        return None

    # -- what a value is made of -------------------------------------------------------------------------
    def _mentions(self, nid: int, memo: dict, leaf) -> bool:
        if nid in memo:
            return memo[nid]
        memo[nid] = False  # a cycle through a phi adds nothing
        node = self.values.nodes[nid]
        kind = node[0]
        got = leaf(node)
        if got is None:
            if kind in ("op", "fn"):
                got = any(self._mentions(x, memo, leaf) for x in node[2])
            elif kind == "phi":
                got = any(d is not None and self._mentions(d, memo, leaf)
                          for d in (self.values.def_node.get(s) for s in node[2]))
            else:
                got = False
        memo[nid] = got
        return got

    def row_like(self, nid: int) -> bool:
        """Whether a value grows with the row: it reads %ctaid (or a cluster's block index)."""
        return self._mentions(nid, self._row, lambda n: True if n[0] == "ctaid" else False if n[0] == "ld" else None)

    def param_like(self, nid: int) -> bool:
        """Whether a value reads a kernel parameter (a size or stride known only at launch)."""
        return self._mentions(nid, self._param, lambda n: (n[1] == "param") if n[0] == "ld" else None)

    def _row_counter(self, nid: int) -> bool:
        """A loop counter whose loop runs to a kernel parameter (a loop over rows that starts at 0)."""
        node = self.values.nodes[nid]
        if node[0] != "phi":
            return False
        ind = self.counters.induction(nid)
        return ind is not None and any(self.param_like(b) for b, _ in self.counters.bounds(node[1]))

    def product(self, nid: int, busy=None) -> Optional[tuple]:
        """(product node, row factor, parameter factor) of the first row x parameter product in a 32-bit value
        (through sums, selects, min/max and loop phis), or None."""
        busy = set() if busy is None else busy
        if nid in busy or len(busy) > 400:
            return None
        busy.add(nid)
        node = self.values.nodes[nid]
        kind = node[0]
        if kind == "op" and node[1] in ("mul", "shl"):
            a, b = node[2]
            for x, y in ((a, b), (b, a)) if node[1] == "mul" else ((a, b),):
                if (self.row_like(x) or self._row_counter(x)) and self.param_like(y) and not self._const(y):
                    return nid, x, y
        if kind == "op" and node[1] in ("add", "sub", "mul", "shl", "selp", "min.s", "min.u", "max.s", "max.u",
                                        "trunc32u", "and", "or"):
            for x in node[2][:2]:
                got = self.product(x, busy)
                if got:
                    return got
        if kind == "phi":
            for d in (self.values.def_node.get(s) for s in node[2]):
                got = d is not None and self.product(d, busy)
                if got:
                    return got
        return None

    def _const(self, nid: int) -> bool:
        return self.values.nodes[nid][0] == "c"

    # -- the check ---------------------------------------------------------------------------------------------
    def issues(self, facts) -> list:
        """One issue per product (or narrowing) and wrap, at its first access; the others through it counted."""
        found: dict = {}  # (at, severity, bits) -> [issue, accesses]
        judged: dict = {}
        for ins, reg in self.accesses():
            for pt in self.points(ins, reg):
                key = (pt.at, pt.value)
                if key not in judged:
                    judged[key] = self._judge(ins, pt, facts)
                iss = judged[key]
                if iss is None:
                    continue
                group = found.setdefault((iss.at, iss.severity, pt.bits), [iss, set()])
                group[1].add(ins.idx)
        out = []
        for iss, accesses in found.values():
            more = len(accesses) - 1
            if more:
                iss = dataclasses.replace(iss, message=f"{iss.message} ({more} more access{'es' if more > 1 else ''} "
                                                       f"through it)")
            out.append(iss)
        return out

    def _judge(self, access, pt: Point, facts) -> Optional[Issue]:
        prod = self.product(pt.value)
        if pt.narrowing:
            if not self.param_like(pt.value) or not (pt.row or prod):
                return None
        elif prod is None:
            return None
        wrap = 1 << pt.bits
        worst, unknown, known = None, [], 0
        for launch in facts.large:
            b = Bounds(self.values, self.params, self.counters, launch)
            iv = b.of(pt.value)
            if iv is None:
                at_least = self._at_least(b, pt, prod)
                if at_least is not None and at_least >= wrap:  # the product alone, plus what is surely added
                    if worst is None or _shown_first(launch, pt) < _shown_first(worst[0], pt):
                        worst = (launch, (at_least, at_least), "at least ")
                    known += 1
                    continue
                unknown.append((launch, b.why))
                continue
            known += 1
            if iv[1] >= wrap and (worst is None or _shown_first(launch, pt) < _shown_first(worst[0], pt)):
                worst = (launch, iv, "")
        # the source line of the product (a hoisted product may have none: then the widening's, the access's)
        at = next((i for i in (self._producer_of(prod[0]) if prod else None, pt.at, access.idx)
                   if i is not None and any(ln > 0 for _f, ln in self.fn.instrs[i].loc)), access.idx)
        widen = self.fn.instrs[pt.at]
        what = self._what(prod, pt, facts)
        wraps = f"2^{pt.bits} elements"
        if pt.scale:
            wraps = f"2^{pt.bits} units of {pt.scale} byte{'s' if pt.scale > 1 else ''} ({_size(wrap * pt.scale)})"
        head = (f"the address of `{access.op}` adds {what}, widened to 64 bits only after it (`{widen.op}`): the "
                f"offset wraps at {wraps}") if not pt.narrowing else (
                f"the address of `{access.op}` uses {what}, a 64-bit value cut to its low 32 bits and sign-extended "
                f"(`{widen.op}` of a 64-bit register: an int it was narrowed to): a value of 2^{pt.bits} or more wraps")
        if worst is not None:
            launch, iv, least = worst
            return Issue("offset-wrap", "error",
                         f"{head}; at {_shape(launch)}, a shape supports() accepts, it reaches "
                         f"{least}{iv[1]:,} (> {wrap - 1:,}): {FIX}", at=at, other=access.idx,
                         other_role="global access")
        if unknown:
            launch, why = unknown[0]
            return Issue("offset-wrap", "warning",
                         f"{head}; cannot decide whether it does at the large shapes supports() accepts: {why} (at "
                         f"{_shape(launch)}); if it can reach 2^{pt.bits}, {FIX}",
                         at=at, other=access.idx, other_role="global access")
        if known:
            return None  # within 32 bits at every large shape the spec accepts
        if facts.unbound:
            return Issue("offset-wrap", "warning",
                         f"{head}; cannot decide whether it does at the large shapes supports() accepts: the spec's "
                         f"launches cannot be made there ({facts.unbound}); refuse those shapes in supports() (the "
                         f"kernel's limit), or pass the value in a type that holds it",
                         at=at, other=access.idx, other_role="global access")
        if facts.refused:
            return Issue("offset-wrap", "info",
                         f"{head}; not a defect here: supports() refuses the large shapes ({facts.refused})",
                         at=at, other=access.idx, other_role="global access")
        return None  # the spec's launches use this entry only at shapes far from the wrap (others take the large)

    def _at_least(self, b: Bounds, pt: Point, prod) -> Optional[int]:
        """Where the whole value has no interval (a loop counter it cannot bound): the product's largest value plus
        the smallest of every other term of the sum, or None (ggml's `x[row * ncols + i]`, i an unrolled counter)."""
        if prod is None:
            return None
        leaves = sum_leaves(self.values.nodes, pt.value)
        if prod[0] not in leaves:
            return None
        top = b.of(prod[0])
        rest = [b.low(x) for k, x in enumerate(leaves) if k != leaves.index(prod[0])]
        if top is None or any(x is None for x in rest):
            return None
        return top[1] + sum(rest)

    def _producer_of(self, nid: int) -> Optional[int]:
        """The instruction that forms a product node (mul / mad / shl), for its source line."""
        if self._producer is None:
            self._producer = {}
            for (i, _k), n in self.values.def_node.items():
                base = self.fn.instrs[i].parts[0]
                for m in (n, *(self.values.nodes[n][2] if self.values.nodes[n][0] == "op" else ())):
                    if base in ("mul", "mad", "shl") and (m not in self._producer
                                                          or self.fn.instrs[self._producer[m]].parts[0] not in
                                                          ("mul", "mad", "shl")):
                        self._producer[m] = i
        return self._producer.get(nid)

    def _what(self, prod, pt: Point, facts) -> str:
        labels = facts.large[0].labels if facts.large else facts.labels
        if prod is None:
            return f"`{self.describe(pt.value, labels)}` (as a factor of a row term)"
        i = self._producer_of(prod[0])
        op = f"`{self.fn.instrs[i].op}` " if i is not None else ""
        return (f"the 32-bit product {op}of {self.describe(prod[1], labels)} and "
                f"{self.describe(prod[2], labels)}")

    def describe(self, nid: int, labels=(), depth: int = 0) -> str:
        """A short source-like name of a value: blockIdx.x, N, x.stride, a loop counter, ..."""
        node = self.values.nodes[nid]
        kind = node[0]
        if kind in _SPECIAL_NAMES and node[1] in _DIMS:
            return f"{_SPECIAL_NAMES[kind]}.{node[1]}"
        if kind == "c":
            return str(node[1])
        if kind == "ld" and node[1] == "param":
            k, off = param_slot(self.values.nodes, self.params, node)
            if k is not None:
                name = labels[k] if k < len(labels) else f"parameter {k}"
                return f"{name} (its member at byte {off})" if off else name
            return "a parameter"
        if depth > 2:
            return "..."
        if kind == "phi":
            ind = self.counters.induction(nid)
            if ind is not None:
                return (f"the loop counter {node[1]} (from {self.describe(ind[0][0], labels, depth + 1)}, step "
                        f"{self.describe(ind[1][0], labels, depth + 1)})")
            return f"{node[1]} (one of several definitions)"
        ops = {"add": "+", "sub": "-", "mul": "*", "shl": "<<", "div.s": "/", "div.u": "/"}
        if kind == "op" and (node[1] in ops or node[1].startswith("shr")) and len(node[2]) == 2:
            sym = ops.get(node[1], ">>")
            a, b = (self.describe(x, labels, depth + 1) for x in node[2])
            return f"({a} {sym} {b})"
        if kind == "op" and node[1].startswith("trunc"):
            return self.describe(node[2][0], labels, depth)
        return "a computed value"


def _shown_first(launch, pt: Point) -> tuple:
    """Which wrapping launch a finding names: the large case made for this wrap (a narrowed stride: rows 2^31
    apart; an unsigned offset: past 2^32 elements; else past 2^31), at the longest row of those ci runs."""
    from verifier.inputs import large_family as lf
    from verifier.inputs.layouts import LARGE_N_CI

    want = lf.ROW_STRIDE_2POW31 if pt.narrowing else lf.LARGE_2POW32 if pt.bits == 32 else lf.LARGE_CASE
    return launch.case != want, launch.N not in LARGE_N_CI, -launch.N


def _shape(launch) -> str:
    from verifier.lint.large import LARGEST

    what = "rows filling 64 GiB per tensor" if launch.case == LARGEST else launch.case
    return f"{what} ({launch.M}x{launch.N})"


def _literal(tok: str) -> Optional[int]:
    return literal_int(tok.strip())


def _bits(t: str) -> int:
    return int(_INT_TYPE.match(t).group(1))


def _size(nbytes: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20)):
        if nbytes >= 1 << k and nbytes % (1 << k) == 0:
            return f"{nbytes >> k} {unit}"
    return f"{nbytes:,} bytes"
