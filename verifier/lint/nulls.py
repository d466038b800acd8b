"""Null pointer arguments: production kernels take optional tensors as pointers and test them (`if (bias !=
nullptr)`, `if (!scale) return;`, `w == nullptr ? 1.f : w[i]`). Where every launch the spec makes of an entry
passes null for one (``Pointer(None)``, a struct's ``("ptr", None)``), the code under that test never runs, and a
finding there would be false: the CFG of that analysis keeps only the edges such a branch takes
(verifier.lint.cfg), and a note says what was left out. Where one launch passes a tensor, the pointer is not null
for the entry and everything stays live.

Decided, and only these: a guard predicate that is a 64-bit kernel parameter (or a struct member of one), through
mov / cvta, compared ``==`` or ``!=`` with 0 (or the bitwise or of several: nvcc's `a || b`), and ``not`` / ``and``
/ ``or`` / ``xor`` of predicates where the decided ones settle the result (`bias && res` with either null). Any
other predicate (a flag, a pointer compared with another pointer, a value loaded from memory, a register with
several reaching definitions) stays live."""
from __future__ import annotations

from typing import Optional

from verifier.lint.issues import Issue
from verifier.lint.ranges import param_slot

_WIDE = ("s64", "u64", "b64")
NOTE_CLASS = "null-branch"  # the note's Issue class (severity 'note': it goes to the report's notes, not findings)


def null_slots(args) -> frozenset:
    """(argument index, byte offset) of each null pointer among a launch's arguments; a struct's members at their
    offsets in it."""
    from verifier.declare.args import PTR, Pointer, as_arg
    from verifier.errors import SpecError

    out = set()
    for k, a in enumerate(args):
        try:
            leaves = as_arg(a).leaves()
        except SpecError:
            continue
        out.update((k, off) for off, kind, v in leaves
                   if kind == PTR and (v is None or (isinstance(v, Pointer) and v.tensor is None)))
    return frozenset(out)


class Decider:
    """Which guarded instructions of one entry the null arguments ``nulls`` decide (on its value nodes)."""

    def __init__(self, values, nulls):
        self.v = values
        self.nulls = frozenset(nulls)
        self.params = {name: k for k, name in enumerate(values.fn.params)}
        self._memo: dict = {}
        self.read: dict = {}  # instruction index -> the null slots its decided predicate reads
        self.selects: list = []  # the selects (selp) whose predicate they decide: each is the operand it picks

    def decided(self) -> dict:
        """{instruction index: whether it runs} of the guarded instructions (of blocks the entry reaches) whose
        predicate the null arguments decide."""
        out = {}
        cfg = self.v.cfg
        for ins in self.v.fn.instrs:
            if cfg.block_of[ins.idx] not in cfg.reachable:
                continue
            select = ins.parts[0] == "selp" and len(ins.args) == 4
            if ins.pred is None and not select:
                continue
            used: set = set()
            if ins.pred is not None and (got := self.truth(self.v.pred_value(ins), used)) is not None:
                out[ins.idx] = got
                self.read[ins.idx] = frozenset(used)
            elif select and self.truth(self.v.operand(ins.idx, ins.args[3]), used) is not None:
                self.selects.append(ins.idx)
                self.read[ins.idx] = frozenset(used)
        return out

    def truth(self, nid: int, used: set) -> Optional[bool]:
        """The predicate node's value in every launch, or None when the null arguments do not decide it; the
        slots it was decided by are added to ``used``."""
        key = nid
        if key in self._memo:
            got, slots = self._memo[key]
            used.update(slots)
            return got
        self._memo[key] = (None, frozenset())  # a cycle decides nothing
        slots: set = set()
        got = self._truth(self.v.nodes[nid], slots)
        if got is None:
            slots = set()
        self._memo[key] = (got, frozenset(slots))
        used.update(slots)
        return got

    def _truth(self, node, used: set) -> Optional[bool]:
        if node[0] != "op":
            return None
        name, args = node[1], node[2]
        if name == "not.pred":
            got = self.truth(args[0], used)
            return None if got is None else not got
        if name in ("and.pred", "or.pred", "xor.pred"):
            sa, sb = set(), set()  # the slots of the side(s) that decide it
            a = self.truth(args[0], sa)
            b = self.truth(args[1], sb)
            if name == "xor.pred":
                if a is None or b is None:
                    return None
                used.update(sa | sb)
                return a != b
            settles = name == "or.pred"  # True settles an or, False an and
            for x, s in ((a, sa), (b, sb)):
                if x is settles:
                    used.update(s)
                    return settles
            if a is not None and b is not None:
                used.update(sa | sb)
                return not settles
            return None
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == "setp" and parts[1] in ("eq", "ne") and parts[2] in _WIDE:
            slots: set = set()
            if not all(self._zero(x, slots, 0) for x in args) or not slots:  # a pointer is tested, not 0 == 0
                return None
            used.update(slots)
            return parts[1] == "eq"
        return None

    def _zero(self, nid: int, slots: set, depth: int) -> bool:
        """Whether a 64-bit value is 0 in every launch: the literal 0, a null pointer argument (its slot added to
        ``slots``), or the bitwise or of such (`bias || residual` is `(bias | residual) == 0` in nvcc's PTX)."""
        node = self.v.nodes[nid]
        if node == ("c", 0):
            return True
        if node[0] == "op" and node[1] == "or" and depth < 8:
            return all(self._zero(x, slots, depth + 1) for x in node[2])
        if node[0] != "ld" or node[1] != "param" or self.v.fn.instrs[node[3]].parts[-1] not in _WIDE:
            return False
        k, off = param_slot(self.v.nodes, self.params, node)
        if k is None or (k, off) not in self.nulls:
            return False
        slots.add((k, off))
        return True


class Folding:
    """``decide`` of verifier.lint.dataflow.Values: a predicate node's value where the null arguments decide it."""

    def __init__(self, nulls):
        self.nulls = nulls
        self._by: Optional[Decider] = None

    def __call__(self, values, nid: int) -> Optional[bool]:
        if self._by is None or self._by.v is not values:
            self._by = Decider(values, self.nulls)
        return self._by.truth(nid, set())


def note(full_cfg, cfg, decider: Decider, decided: dict) -> Optional[Issue]:
    """The note of what the decided predicates left out of the analysis (None when nothing): which arguments were
    null, the first test that cut code (or select it decided), the instructions (``Issue.skipped``) that run only
    where they are not null, and how many selects take the null side."""
    fn = cfg.fn
    skipped = tuple(i for i in range(len(fn.instrs))
                    if cfg.block_of[i] not in cfg.reachable and full_cfg.block_of[i] in full_cfg.reachable)
    selects = [i for i in decider.selects if cfg.block_of[i] in cfg.reachable]
    if not skipped and not selects:
        return None
    cut = [i for i in sorted(decided) if _cuts(full_cfg, cfg, i, decided[i])] if skipped else []
    cut = cut or (sorted(decided) if skipped else [])
    slots = sorted(set().union(*(decider.read[i] for i in cut + selects)))
    names = [f"argument {k}" + (f" (its member at byte {off})" if off else "") for k, off in slots]
    what = names[0] + " is a null pointer" if len(names) == 1 else \
        ", ".join(names[:-1]) + f" and {names[-1]} are null pointers"
    said = []
    if skipped:
        said.append(f"the code that runs only where {'it is' if len(names) == 1 else 'they are'} not null was not "
                    f"analysed")
    if selects:
        said.append(f"{len(selects)} select(s) on {'its' if len(names) == 1 else 'their'} nullness taken as the "
                    f"null side")
    return Issue(NOTE_CLASS, "note", f"{what} in every launch of this entry: {'; '.join(said)}",
                 at=(cut + selects)[0], skipped=skipped)


def _cuts(full_cfg, cfg, i: int, runs: bool) -> bool:
    """Whether deciding instruction ``i`` left something out: a guarded instruction that never runs, or a branch
    (reached) that lost an edge."""
    b = cfg.block_of[i]
    if b not in cfg.reachable:
        return not runs and full_cfg.block_of[i] in full_cfg.reachable and cfg.fn.instrs[i].parts[0] not in (
            "bra", "ret", "exit", "trap", "brx")
    return len(cfg.blocks[b].succs) < len(full_cfg.blocks[full_cfg.block_of[i]].succs)
