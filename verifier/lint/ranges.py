"""Ranges of the value nodes (verifier.lint.dataflow) of an entry at one launch, as the program means them (no 32-bit
wrap): interval arithmetic over the launch's grid, block and argument values, and loop counters bounded by their
loops' comparisons (``Counters``). The offset-wrap check (verifier.lint.offsets) judges a 32-bit offset by them."""
from __future__ import annotations

from typing import Optional

GRID_MAX = (2 ** 31 - 1, 65535, 65535)  # CUDA's grid limits: a larger launch does not run
_DIMS = {"x": 0, "y": 1, "z": 2}


class Counters:
    """Loop counters of one entry: registers whose every definition is ``R = init`` or ``R = R + step``."""

    def __init__(self, values):
        self.values = values
        self._setps: Optional[list] = None
        self._families: dict = {}
        self._init_regs: Optional[dict] = None

    def induction(self, nid: int) -> Optional[tuple]:
        """(init nodes, step nodes) of a loop counter: a phi of register R whose definitions are ``R = init`` or
        ``R = R + step`` (a rotated or unrolled loop updates R at several places, by several steps); else None."""
        node = self.values.nodes[nid]
        if node[0] != "phi":
            return None
        inits, steps = [], []
        for d in (self.values.def_node.get(s) for s in node[2]):
            if d is None:
                return None
            step = self.step(d, node[1])
            (inits if step is None else steps).append(d if step is None else step)
        return (tuple(inits), tuple(steps)) if inits and steps else None

    def family(self, reg: str) -> Optional[tuple]:
        """(init nodes, step nodes) over every definition of register ``reg`` (a loop counter: each definition
        ``R = init`` or ``R = R + step``), or None when it has no update."""
        if reg not in self._families:
            inits, steps = [], []
            for site in self.values.defs_by_reg.get(reg, ()):
                d = self.values.def_node.get(site)
                if d is None:
                    inits = steps = []
                    break
                step = self.step(d, reg)
                (inits if step is None else steps).append(d if step is None else step)
            self._families[reg] = (tuple(inits), tuple(steps)) if inits and steps else None
        return self._families[reg]

    def inits_of(self) -> dict:
        """init node -> the loop-counter registers that start from it."""
        if self._init_regs is None:
            self._init_regs = {}
            for reg, sites in self.values.defs_by_reg.items():
                if len(sites) > 1 and (fam := self.family(reg)) is not None:
                    for d in fam[0]:  # as a sum's term reads it: through trunc32u
                        terms = sum_leaves(self.values.nodes, d)
                        self._init_regs.setdefault(terms[0] if len(terms) == 1 else d, []).append(reg)
        return self._init_regs

    def step(self, d: int, reg: str, depth: int = 0) -> Optional[int]:
        """The step of ``R = R + step`` (node ``d``), else None. ``R = (R + a) + b`` is a step of ``a + b``: an
        unrolled loop's last update, nvcc's ``mad.lo R, ntid, 7, R1`` with R1 = R + ntid (ggml's reduce_rows)."""
        u = self.values.nodes[d]
        if u[0] == "op" and u[1] == "trunc32u":
            u = self.values.nodes[u[2][0]]
        if u[0] == "op" and u[1] == "add":
            for q, step in (u[2], u[2][::-1]):
                qn = self.values.nodes[q]
                if qn[0] == "phi" and qn[1] == reg:
                    return step
            for q, rest in (u[2], u[2][::-1]) if depth < 8 else ():
                inner = self.step(q, reg, depth + 1)
                if inner is not None:
                    return self.values.mk("op", "add", (inner, rest))
        return None

    def bounds(self, reg: str) -> list:
        """[(bound node, inclusive)] of comparisons ``counter < bound`` (or ``<=``, ``bound > counter``) on the loop
        counter held in register ``reg`` (any of its phis) or its next value."""
        if self._setps is None:
            self._setps = [n for n in self.values.nodes if n[0] == "op" and n[1].startswith("setp.")
                           and len(n[2]) == 2]

        def counter(x):
            n = self.values.nodes[x]
            if n[0] == "op" and n[1] == "trunc32u":
                n = self.values.nodes[n[2][0]]
            return (n[0] == "phi" and n[1] == reg) or (n[0] == "op" and self.step(x, reg) is not None)

        out = []
        for n in self._setps:
            cmp = n[1].split(".")[1]
            a, b = n[2]
            if cmp in ("lt", "lo", "le", "ls") and counter(a):
                out.append((b, cmp in ("le", "ls")))
            elif cmp in ("gt", "hi", "ge", "hs") and counter(b):
                out.append((a, cmp in ("ge", "hs")))
        return out


class Bounds:
    """The interval of values (as the program means them: no 32-bit wrap) of nodes at one large launch."""

    def __init__(self, values, params: dict, counters: "Counters", launch):
        self.values, self.params, self.counters, self.launch = values, params, counters, launch
        self.nodes = values.nodes
        self.memo: dict = {}
        self.busy: set = set()
        self.ranges: dict = {}  # loop-counter register -> its range
        self._low_busy: set = set()  # phis whose lower bound is being formed (low)
        self.why = ""

    def low(self, nid: int, assume: Optional[dict] = None) -> Optional[int]:
        """A lower bound of a node where its interval is unknown (None: none known): a loop counter the interval
        cannot bound (an unrolled `for (i = col; i < n;) { ...; i += blockDim.x; }`) is at least its smallest
        start when every way around its loop adds a non-negative amount. ``assume``: phi -> its bound, inside
        its own loop."""
        assume = assume or {}
        if nid in assume:
            return assume[nid]
        iv = self.of(nid)
        if iv is not None:
            return iv[0]
        node = self.nodes[nid]
        if node[0] == "op":
            name, args = node[1], node[2]
            if name.startswith("trunc"):
                return self.low(args[0], assume)
            if name in ("add", "mul", "shl", "min.s", "min.u"):
                a, b = self.low(args[0], assume), self.low(args[1], assume)
                if a is None or b is None or (name != "add" and not name.startswith("min") and (a < 0 or b < 0)):
                    return None
                return {"add": a + b, "mul": a * b, "shl": a << b if b < 64 else None}.get(name, min(a, b))
            if name in ("max.s", "max.u"):
                known = [x for x in (self.low(a, assume) for a in args[:2]) if x is not None]
                return max(known) if known else None
            return None
        if node[0] != "phi" or nid in self._low_busy:
            return None
        defs = [self.values.def_node.get(s) for s in node[2]]
        if any(d is None for d in defs):
            return None
        self._low_busy.add(nid)
        try:
            lows = [(d, self.low(d, assume)) for d in defs]  # a value coming back around the loop: None here
            starts = [x for _d, x in lows if x is not None]
            if not starts:
                return None
            start = min(starts)
            for d, x in lows:
                if x is None and ((y := self.low(d, {**assume, nid: start})) is None or y < start):
                    return None
            return start
        finally:
            self._low_busy.discard(nid)

    def _unknown(self, why: str):
        self.why = self.why or why
        return None

    def of(self, nid: int) -> Optional[tuple]:
        if nid in self.memo:
            return self.memo[nid]
        if nid in self.busy:
            return self._unknown("a value defined by a cycle the check cannot bound")
        self.busy.add(nid)
        got = self._of(nid)
        self.busy.discard(nid)
        self.memo[nid] = got
        return got

    def _of(self, nid: int) -> Optional[tuple]:
        node = self.nodes[nid]
        kind = node[0]
        L = self.launch
        if kind == "c":
            return node[1], node[1]
        if kind in ("ctaid", "nctaid", "tid", "ntid") and node[1] in _DIMS:
            d = _DIMS[node[1]]
            g = min(L.grid[d], GRID_MAX[d])
            return {"ctaid": (0, g - 1), "nctaid": (g, g), "tid": (0, L.block[d] - 1),
                    "ntid": (L.block[d], L.block[d])}[kind]
        if kind == "lane":
            return 0, 31
        if kind == "ld" and node[1] == "param":
            k, off = param_slot(self.nodes, self.params, node)
            v = L.args[k] if k is not None and k < len(L.args) else None
            if isinstance(v, tuple):  # a struct: the member at that byte offset
                v = dict(v).get(off)
            elif off:
                v = None
            if v is None:
                return self._unknown(f"kernel parameter {k if k is not None else '?'} has no integer value here")
            return v, v
        if kind == "op":
            return self._op(node[1], node[2])
        if kind == "phi":
            return self._phi(nid, node)
        if kind == "ld":
            return self._unknown("a value loaded from memory")
        return self._unknown("a value the check does not model")

    def _op(self, name: str, args) -> Optional[tuple]:
        if name.startswith("trunc"):
            return self.of(args[0])  # as the program means it: the wrap is what is judged
        if name.startswith(("setp", "not", "and.pred", "or.pred", "xor.pred")):
            return 0, 1
        ivs = []
        for a in args[:3 if name == "selp" else 2]:
            iv = self.of(a) if name != "selp" or len(ivs) < 2 else (0, 1)
            if iv is None:
                return None
            ivs.append(iv)
        (alo, ahi) = ivs[0]
        (blo, bhi) = ivs[1] if len(ivs) > 1 else (0, 0)
        if name == "add":
            return alo + blo, ahi + bhi
        if name == "sub":
            rem = self._remainder(args)
            if rem is not None:
                return rem
            return alo - bhi, ahi - blo
        if name == "mul":
            ps = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
            return min(ps), max(ps)
        if name == "shl" and 0 <= blo and bhi < 64:
            ps = (alo << blo, alo << bhi, ahi << blo, ahi << bhi)
            return min(ps), max(ps)
        if name == "selp":
            return min(alo, blo), max(ahi, bhi)
        if name in ("min.s", "min.u"):
            return min(alo, blo), min(ahi, bhi)
        if name in ("max.s", "max.u"):
            return max(alo, blo), max(ahi, bhi)
        if name == "and" and (alo >= 0 or blo >= 0):  # a mask: at most the non-negative operand
            return 0, min(hi for lo, hi in ((alo, ahi), (blo, bhi)) if lo >= 0)
        if alo < 0 or blo < 0:
            return self._unknown(f"a negative operand of `{name}`")
        if name.startswith("shr"):
            return alo >> bhi, ahi >> blo
        if name in ("div.s", "div.u") and blo > 0:
            return alo // bhi, ahi // blo
        if name in ("rem.s", "rem.u") and blo > 0:
            return 0, min(ahi, bhi - 1)
        if name in ("or", "xor"):
            return 0, (1 << max(ahi, bhi).bit_length()) - 1
        return self._unknown(f"`{name}` of values the check cannot bound")

    def _remainder(self, args) -> Optional[tuple]:
        """a - (a / b) * b, how nvcc forms an unsigned `a % b` (vLLM's `token_head_idx % num_heads`): [0, b - 1]
        for a >= 0, b > 0; the two ends of a difference taken apart would make it [-a, a]."""
        strip = self._untrunc
        a, m = strip(args[0]), self.nodes[strip(args[1])]
        if m[0] != "op" or m[1] != "mul":
            return None
        for q, b in ((m[2][0], m[2][1]), (m[2][1], m[2][0])):
            qn = self.nodes[strip(q)]
            if qn[0] == "op" and qn[1] in ("div.u", "div.s") and strip(qn[2][0]) == a and strip(qn[2][1]) == strip(b):
                ia, ib = self.of(a), self.of(b)
                if ia is not None and ib is not None and ia[0] >= 0 and ib[0] > 0:
                    return 0, min(ia[1], ib[1] - 1)
        return None

    def _untrunc(self, nid: int) -> int:
        n = self.nodes[nid]
        return self._untrunc(n[2][0]) if n[0] == "op" and n[1].startswith("trunc") else nid

    def _phi(self, nid: int, node) -> Optional[tuple]:
        if self.counters.induction(nid) is None:
            ivs = [self.of(d) for d in (self.values.def_node.get(s) for s in node[2]) if d is not None]
            if not ivs or any(iv is None for iv in ivs):
                return None
            return min(iv[0] for iv in ivs), max(iv[1] for iv in ivs)
        return self.counter(node[1])

    def counter(self, reg: str, busy=()) -> Optional[tuple]:
        """The range of a loop counter (register ``reg``, all its definitions): from its smallest start to the
        loosest bound its loop compares it with; with no bound, a sibling's: nvcc strength-reduces ``row * N + i``
        into a counter of its own that starts at ``row * N + i0`` and steps with ``i`` (its range is i's + row * N)."""
        if reg in self.ranges:
            return self.ranges[reg]
        self.ranges[reg] = None  # a cycle of siblings bounds nothing
        got = self._counter(reg, (*busy, reg))
        self.ranges[reg] = got
        return got

    def _counter(self, reg: str, busy) -> Optional[tuple]:
        fam = self.counters.family(reg)
        if fam is None:
            return self._unknown(f"the register {reg}")
        inits = [self.of(d) for d in fam[0]]
        steps = [self.of(d) for d in fam[1]]
        if any(iv is None for iv in inits + steps):
            return None
        if any(st[0] <= 0 for st in steps):
            return self._unknown(f"the loop counter {reg} does not count up")
        lo, init_hi = min(iv[0] for iv in inits), max(iv[1] for iv in inits)
        his, why = [], self.why
        for bound, inclusive in self.counters.bounds(reg):
            iv = self.of(bound)
            if iv is not None:
                his.append(iv[1] if inclusive else iv[1] - 1)
        self.why = why  # a comparison it could not bound is not what the counter's range depends on
        if his:  # the loosest bound: a comparison inside the loop may be tighter than the loop's own
            return lo, max(init_hi, max(his))
        hi = self._sibling(reg, fam, {st for st in steps}, busy)
        if hi is None:
            return self._unknown(f"the range of the loop counter {reg} (no bound read from its loop's comparisons)")
        return lo, max(init_hi, hi)

    def _sibling(self, reg: str, fam, steps: set, busy) -> Optional[int]:
        """The largest value of counter ``reg`` as ``sibling + difference`` (each start of ``reg`` a sum holding
        another counter, or that counter's start, that steps by the same amounts), or None."""
        nodes, his = self.nodes, []
        for init in fam[0]:
            leaves = sum_leaves(nodes, init)
            best = None
            for k, leaf in enumerate(leaves):
                n = nodes[leaf]
                others = [n[1]] if n[0] == "phi" else self.counters.inits_of().get(leaf, [])
                for other in others:
                    ofam = self.counters.family(other) if other not in busy else None
                    if ofam is None or not steps <= {self.of(d) for d in ofam[1]}:
                        continue
                    rng = self.counter(other, busy)
                    rest = [self.of(x) for j, x in enumerate(leaves) if j != k]
                    if rng is not None and all(iv is not None for iv in rest):
                        best = rng[1] + sum(iv[1] for iv in rest)
                        break
                if best is not None:
                    break
            if best is None:
                return None
            his.append(best)
        return max(his) if his else None


def param_slot(nodes, params: dict, node) -> tuple:
    """(parameter index, byte offset) a ``ld.param`` node reads (index None: not a kernel parameter)."""
    addr = nodes[node[2]]
    off = 0
    if addr[0] == "op" and addr[1] == "add" and nodes[addr[2][1]][0] == "c":
        off, addr = nodes[addr[2][1]][1], nodes[addr[2][0]]
    return (params.get(addr[1]) if addr[0] == "sym" else None), off


def sum_leaves(nodes, nid: int) -> list:
    """The terms of a sum (through add and trunc32u)."""
    n = nodes[nid]
    if n[0] == "op" and n[1] == "trunc32u":
        return sum_leaves(nodes, n[2][0])
    if n[0] == "op" and n[1] == "add":
        return sum_leaves(nodes, n[2][0]) + sum_leaves(nodes, n[2][1])
    return [nid]
