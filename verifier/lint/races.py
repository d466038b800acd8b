"""The shared-memory hazard check: two accesses, at least one a plain store, that threads can run with no
barrier between them, on overlapping bytes of two different threads.

Two threads of different warps are ordered only by a block barrier; two lanes of one warp also by a warp
meeting point (verifier.lint.warpsync). Stores of one value that is the same in both threads (warp-uniform
for lanes of one warp, block-uniform across warps) are no hazard: the bytes hold that value whichever lands
last, as racecheck treats same-value writes. A ``cp.async`` copy is a write that stays in flight until a
``cp.async.wait_*`` of its thread: a barrier orders it only once the thread has waited.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from verifier.lint import isa, warpsync
from verifier.lint.cfg import EXIT
from verifier.lint.dataflow import UNIFORM, VARYING, WARP
from verifier.lint.issues import Issue, short_name

_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
               "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16}
_MEMORY = ("ld", "st", "atom", "red", "cp", "ldmatrix", "stmatrix")
_SPANS = ("a missing __syncthreads()", "lanes of one warp: a missing __syncwarp()")


def access_bytes(op: str) -> int:
    parts = op.split(".")
    vec = 1
    for p in parts:
        if p in ("v2", "v4", "v8"):
            vec = int(p[1])
    t = next((p for p in reversed(parts) if p in _TYPE_BYTES), "b32")
    return vec * _TYPE_BYTES[t]


def shared_accesses(an) -> list:
    """[(instr, kind, address node, bytes)] of the reachable shared-memory accesses; kind 'read', 'write',
    'atomic' or 'async' (a cp.async copy into shared memory)."""
    out = []
    for ins in an.fn.instrs:
        base, size = ins.parts[0], None
        if base not in _MEMORY or an.cfg.block_of[ins.idx] not in an.cfg.reachable:
            continue
        if isa.is_cp_async(ins):
            addr_arg, kind = ins.args[0], "async"
            size = int(ins.args[2], 0) if len(ins.args) > 2 and ins.args[2].isdigit() else 16
        elif base in ("ldmatrix", "stmatrix") and "shared" in ins.parts:  # each lane names one 16-byte row
            addr_arg, kind, size = ins.args[1 if base == "ldmatrix" else 0], \
                ("read" if base == "ldmatrix" else "write"), 16
        elif base not in ("ld", "st", "atom", "red") or isa.space(ins.parts) != "shared":
            continue
        elif base == "ld":
            addr_arg, kind = ins.args[1], "read"
        elif base == "st":
            addr_arg, kind = ins.args[0], "write"
        else:
            addr_arg, kind = ins.args[1 if base == "atom" else 0], "atomic"
        out.append((ins, kind, an.values.address(ins.idx, addr_arg), size or access_bytes(ins.op)))
    return out


def _phases(cfg, dead: frozenset = frozenset()) -> list:
    starts = []
    if cfg.blocks and not cfg.barrier_block[0]:
        starts.append((0, -1))
    for b in cfg.blocks:
        if cfg.barrier_block[b.id] and b.id in cfg.reachable:
            starts.append((b.id, b.start))
    out = []
    for blk, idx in starts:
        reach = cfg.barrier_free_reach(blk, idx, dead)
        if idx == -1:
            reach |= set(range(cfg.blocks[0].start, cfg.blocks[0].end))
        out.append(reach)
    return out


def _async_reach(an, idx: int) -> tuple:
    """(instructions other threads may run while the cp.async at ``idx`` may be in flight, those only because a
    ``cp.async.wait_group N > 0`` may have left it in flight): a barrier ends the flight only after a wait."""
    cfg, ins = an.cfg, an.fn.instrs
    sure, maybe, seen = set(), set(), set()
    todo = [(idx + 1, 0)]  # (instruction, state: 0 in flight, 1 waited with groups left, 2 landed)
    while todo:
        i, st = todo.pop()
        while i < len(ins) and (i, st) not in seen:
            seen.add((i, st))
            if i in cfg.barriers and st == 2:
                break
            (maybe if st == 1 and i not in an.bfreach(idx) else sure).add(i)
            w = isa.cp_async_wait(ins[i])
            if w is not None:
                st = max(st, 2 if w == 0 else 1)
            b = cfg.blocks[cfg.block_of[i]]
            if i + 1 < b.end:
                i += 1
                continue
            succ = [s for s, _ in b.succs if s != EXIT]
            todo += [(cfg.blocks[s].start, st) for s in succ[1:]]
            i = cfg.blocks[succ[0]].start if succ else len(ins)
    return sure, maybe - sure


def _sides_concurrent(an, sem, a, b, phase, reach, floor, stops, cyclic=True) -> bool:
    """Whether ``a`` and ``b`` lie on two sides of a branch that splits threads (its condition's level at
    least ``floor``, or, with ``cyclic``, the branch on a barrier-free cycle) within ``phase``; ``reach(i)``: what
    follows i in one interval, ``stops``: the instructions that end one (a side that starts with one holds
    nothing else)."""
    cfg = an.cfg
    for blk in cfg.blocks:
        if len(blk.succs) < 2 or blk.end - 1 not in phase:
            continue
        p = sem.branch_pred.get(blk.id)
        if not ((cyclic and blk.id in cfg.bf_cyclic) or (p is not None and sem.levels[p] >= floor)):
            continue
        sides, before_join = [], []
        for s, edge in blk.succs:
            first = cfg.blocks[s].start if s != EXIT else None
            sides.append(set() if first is None or cfg.barrier_block[s] else
                         ({first} if first in stops else {first} | reach(first)))
            # what runs on this side before the paths rejoin (the branch's post-dominator, where both threads
            # are again at one point: from there, reachability and the later branches order them)
            before_join.append(lambda i, e=edge: (blk.id, e) in sem.all_cd[cfg.block_of[i]])
        if any(i != j and a in si and b in sj and (before_join[i](a) or before_join[j](b))
               for i, si in enumerate(sides) for j, sj in enumerate(sides)):
            return True
    return False


def shared_races(an, sem, stepping=None) -> list:
    """The hazards of one entry for one block shape; with ``stepping`` (verifier.lint.stepped), once per step of
    its barrier-stepped loops, an interval crossing a loop's header holding its later access in the next step."""
    acc = shared_accesses(an)
    if not acc:
        return []
    if not stepping:
        return [iss for A, B, how, reach in _pairs(an, sem, acc)
                if (iss := _compare(an, sem, A, B, *how, **reach)) is not None]
    out = []
    for idx, s in stepping.combos:
        for A, B, how, reach in _pairs(an, s, acc):
            a, b = A[0].idx, B[0].idx
            sides = [(A, B, s)] if stepping.within_one_iteration(a, b) else []
            for X, Y, x, y in ((A, B, a, b), (B, A, b, a)):
                sides += [(X, Y, n) for li in stepping.crossing(x, y)
                          if (n := stepping.entered_sem(idx, li, x)) is not None]
            for X, Y, sem_y in sides:
                iss = _compare(an, s, X, Y, *how, **reach, sem_b=sem_y)
                if iss is not None:
                    out.append(iss)
                    break
    return out


def _pairs(an, sem, acc):
    """(A, B, ordering, reach functions) of the pairs of accesses threads may run in one barrier interval."""
    order = warpsync.WarpOrder(an, sem)
    flights = {x[0].idx: _async_reach(an, x[0].idx) for x in acc if x[1] == "async"}
    reach = dict(warp_reach=order.reach,
                 block_reach=lambda i: flights[i][0] | flights[i][1] if i in flights else an.bfreach(i, sem))
    seen = set()
    for phase in _phases(an.cfg, sem.dead_edges()):
        inside = [x for x in acc if x[0].idx in phase or x[0].idx in flights]
        for i, A in enumerate(inside):
            for B in inside[i:]:
                if A[1] not in ("write", "async") and B[1] not in ("write", "async"):
                    continue  # read/read, atomic/atomic, read/atomic
                key = (A[0].idx, B[0].idx)
                if key in seen:
                    continue
                how = _ordering(an, sem, order, flights, A, B, phase)
                if how is None:
                    continue
                seen.add(key)
                yield A, B, how, reach


def _ordering(an, sem, order, flights, A, B, phase):
    """None if no two threads can run A and B in one interval, else (cross-warp pairs count, same-warp pairs
    count, severity, lane masks a partial-mask __syncwarp orders): pairs of threads that store one value to one
    place never count."""
    a, b = A[0].idx, B[0].idx
    if A[1] == "async" or B[1] == "async":  # warp meeting points do not order a copy in flight
        sure = a == b or b in an.bfreach(a) or a in an.bfreach(b)
        maybe = False
        for x, y in ((a, b), (b, a)):
            if x in flights:
                sure |= y in flights[x][0]
                maybe |= y in flights[x][1]
        return (True, True, "error", ()) if sure else ((True, True, "warning", ()) if maybe else None)
    def bfreach(i):  # at this block shape: a branch on blockDim taken one way has one side
        return an.bfreach(i, sem)

    if not (a == b or b in bfreach(a) or a in bfreach(b)
            or _sides_concurrent(an, sem, a, b, phase, bfreach, WARP, an.cfg.barriers)):
        return None
    def unordered(o):  # lanes of a warp agree on a warp-uniform branch
        return o.concurrent(a, b) or _sides_concurrent(an, sem, a, b, phase, o.reach, VARYING, o.points, cyclic=False)

    in_warp = unordered(order)
    cross = not warpsync.same_stored_value(sem, A[0], B[0], same_warp=False, one_instance=False)
    one = a == b and a not in order.reach(a)  # lanes of a warp meet at this store only in one execution of it
    same = in_warp and not warpsync.same_stored_value(sem, A[0], B[0], same_warp=True, one_instance=one)
    if not cross and not same:
        return None
    # lanes a partial-mask __syncwarp orders: two lanes both in one of these masks are no pair
    ordered = tuple(m for m in order.partial if not unordered(order.narrowed(m))) if same else ()
    return cross, same, "error", ordered


def _base_split(an, terms: dict):
    base, other = {}, {}
    for atom, c in terms.items():
        node = an.values.nodes[atom]
        if node[0] == "sym" and node[1] in an.shared:
            name = node[1] if an.shared[node[1]] is not None else "<dynamic shared memory>"
            base[name] = base.get(name, 0) + c
        else:
            other[atom] = c
    return base, other


def _compare(an, sem, A, B, cross: bool, same: bool, severity: str, ordered: tuple, warp_reach, block_reach,
             sem_b=None) -> Optional[Issue]:
    """The issue of accesses A and B if two of their threads (as ``cross`` and ``same`` allow) touch one byte;
    ``warp_reach(i)`` / ``block_reach(i)``: what a lane / a thread of another warp can run unordered after i
    (names the two accesses in the order they race); ``ordered``: lane masks whose lanes are ordered with each
    other (no same-warp pair within one); ``sem_b``: B's values when they are another step's."""
    sem_b = sem if sem_b is None else sem_b
    (ia, ka, aa, wa), (ib, kb, ab, wb) = A, B
    ta, ra = sem.decompose(aa)
    tb, rb = sem_b.decompose(ab)
    base_a, other_a = _base_split(an, ta)
    base_b, other_b = _base_split(an, tb)
    if base_a and base_b and base_a != base_b and len(base_a) == 1 and len(base_b) == 1 \
            and list(base_a.values()) == [1] and list(base_b.values()) == [1]:
        return None  # two different shared variables
    if not base_a or not base_b:
        first, second, fk, sk = _in_order(A, B, an.bfreach)
        return Issue("shared-race", "warning",
                     f"cannot decide whether the {fk} and the {sk} of shared memory touch the same address in one "
                     f"barrier interval (an address is not a known shared variable plus an offset); if they can, a "
                     f"barrier is missing", at=first[0].idx, other=second[0].idx, other_role=sk)
    for atom in set(other_a) & set(other_b):  # the same in both threads: cancels
        sem.ensure(atom)
        if other_a[atom] == other_b[atom] and sem.levels[atom] == UNIFORM and sem.invariant[atom]:
            del other_a[atom], other_b[atom]
    other_a, other_b = {k: c for k, c in other_a.items() if c}, {k: c for k, c in other_b.items() if c}
    n = sem.nthreads
    xa = sem.evaluate(ra) if ra is not None else np.zeros(n, dtype=np.int64)
    xb = sem_b.evaluate(rb) if rb is not None else np.zeros(n, dtype=np.int64)
    ga, _ = sem.guard_mask(ia)
    gb, _ = sem_b.guard_mask(ib)
    if other_a or other_b:  # run-time terms left: their multiples may make two threads' bytes meet
        if not _strided(sem, xa, wa, ga, xb, wb, gb, other_a, other_b, cross, same, ordered):
            return None
        first, second, fk, sk = _in_order(A, B, an.bfreach)
        steps = ", ".join(str(abs(c)) for c in sorted(set(other_a.values()) | set(other_b.values())))
        return Issue("shared-race", "warning",
                     f"cannot decide whether the {fk} and the {sk} of shared memory touch the same address in one "
                     f"barrier interval: the addresses also hold run-time multiples of {steps} bytes (values that "
                     f"can differ between threads, or loop counters of a loop without a barrier) that may make two "
                     f"threads meet; if they can, a barrier is missing", at=first[0].idx, other=second[0].idx,
                     other_role=sk)
    hit = _overlap(xa, wa, ga, xb, wb, gb, cross, same, ordered=ordered)
    if hit is None:
        return None
    t1, t2, off = hit
    first, second, fk, sk = _in_order(A, B, warp_reach if t1 // 32 == t2 // 32 else block_reach)
    if first is not A:  # name the threads in program order of the two accesses
        t1, t2 = t2, t1
    kind = {("write", "read"): "RAW", ("read", "write"): "WAR", ("write", "write"): "WAW"}.get((fk, sk), "atomic/plain")
    name = next(iter(base_a))
    if "async" in (ka, kb):
        why = ("while its cp.async copy may still be in flight: a barrier orders the copy only after its thread "
               "waited for it (cp.async.wait_group 0 / wait_all before the __syncthreads())")
        if severity == "warning":
            why += "; the cp.async.wait_group before the barrier leaves groups in flight, maybe this one"
    else:
        why = f"with no barrier between them on some path ({_SPANS[t1 // 32 == t2 // 32]})"
    return Issue("shared-race", severity,
                 f"{kind} hazard on shared memory: thread {t1} {_verb(fk)} {short_name(name)}+{off} and thread "
                 f"{t2} {_verb(sk)} it {why}", at=first[0].idx, other=second[0].idx, other_role=sk)


def _strided(sem, xa, wa, ga, xb, wb, gb, terms_a: dict, terms_b: dict, cross, same, ordered=()) -> bool:
    """Whether two threads' accesses can meet when the addresses also hold ``terms`` ({atom: coeff}, each an
    integer per thread): only on bytes equal modulo the coefficients' gcd and, when one side alone moves, one
    way (coefficients of one sign on values never negative: an induction variable's k * step, a loop counter
    counting up), only at or past where it starts."""
    coeffs = list(terms_a.values()) + list(terms_b.values())
    g = math.gcd(*[abs(c) for c in coeffs])
    one_way = (not terms_a or not terms_b) and len({c > 0 for c in coeffs}) == 1 and \
        all(sem.nonneg(t) for t in (terms_a or terms_b))
    if not one_way:
        return _overlap(xa, wa, ga, xb, wb, gb, cross, same, mod=g, ordered=ordered) is not None
    if terms_b:  # let A be the side that moves
        xa, wa, ga, xb, wb, gb = xb, wb, gb, xa, wa, ga
    sign = 1 if coeffs[0] > 0 else -1
    va, tha = _bytes(xa, wa, ga)
    vb, thb = _bytes(xb, wb, gb)
    ra, rb = va % g, vb % g
    budget = 1 << 14
    for r in np.intersect1d(ra, rb):
        a_v, a_t = va[ra == r], tha[ra == r]
        for v, t in zip(vb[rb == r], thb[rb == r]):
            budget -= 1
            if budget < 0:
                return True  # too many to look at: say it may
            if _pair(a_t[sign * (v - a_v) >= 0], np.array([t]), cross, same, ordered) is not None:
                return True
    return False


def _bytes(x, w, g) -> tuple:
    """(bytes, thread of each) of the threads ``g`` selects accessing [x, x + w)."""
    t = np.nonzero(g)[0]
    return (x[t][:, None] + np.arange(w)[None, :]).ravel(), np.repeat(t, w)


def _in_order(A, B, reach) -> tuple:
    """(first, second, first's kind, second's kind): the two accesses in the order one can follow the other."""
    first, second = (A, B) if B[0].idx in reach(A[0].idx) or A[0].idx == B[0].idx else (B, A)
    return first, second, _plain(first[1]), _plain(second[1])


def _plain(kind: str) -> str:
    return "write" if kind == "async" else kind


def _verb(kind: str) -> str:
    return {"write": "writes", "read": "reads", "atomic": "atomically updates"}[kind]


def _overlap(xa, wa, ga, xb, wb, gb, cross=True, same=True, mod=0, ordered=()):
    """(thread a, thread b, byte offset) of two different threads whose accesses [x, x+w) overlap (bytes taken
    modulo ``mod`` when given), or None; pairs in two warps count when ``cross``, pairs in one warp when ``same``
    (but for two lanes both in one mask of ``ordered``)."""
    ba, tha = _bytes(xa, wa, ga)
    bb, thb = _bytes(xb, wb, gb)
    if ba.size == 0 or bb.size == 0:
        return None
    if mod:
        ba, bb = ba % mod, bb % mod
    common = np.intersect1d(ba, bb)
    if common.size == 0:
        return None
    keep_a, keep_b = np.isin(ba, common), np.isin(bb, common)
    ba, tha, bb, thb = ba[keep_a], tha[keep_a], bb[keep_b], thb[keep_b]
    found = []
    if cross:  # a byte touched from two warps (the two sides together): some pair of them is in two warps
        allb, allw = np.concatenate([ba, bb]), np.concatenate([tha, thb]) // 32
        order = np.argsort(allb, kind="stable")
        allb, allw = allb[order], allw[order]
        starts = np.flatnonzero(np.r_[True, allb[1:] != allb[:-1]])
        spread = np.maximum.reduceat(allw, starts) != np.minimum.reduceat(allw, starts)
        if spread.any():
            found.append(int(allb[starts[np.argmax(spread)]]))
    if same:  # a byte touched by two threads of one warp (the two sides together, both present)
        ka, kb = ba * 64 + tha // 32, bb * 64 + thb // 32
        both = np.intersect1d(ka, kb)
        if both.size:
            keys = np.unique(np.concatenate([np.stack([ka, tha], 1), np.stack([kb, thb], 1)])[
                np.isin(np.concatenate([ka, kb]), both)], axis=0)[:, 0]
            k, counts = np.unique(keys, return_counts=True)
            if ordered:  # every shared byte: the first ones' pairs may all be ordered lanes
                found.extend(int(b) for b in np.unique(k[counts > 1] // 64))
            elif (counts > 1).any():
                found.append(int(k[np.argmax(counts > 1)] // 64))
    for byte in sorted(set(found)):
        pair = _pair(tha[ba == byte], thb[bb == byte], cross, same, ordered)
        if pair is not None:
            return pair[0], pair[1], byte
    return None


def _pair(sa, sb, cross: bool, same: bool, ordered=()):
    """Two different threads, one of ``sa`` and one of ``sb``, in two warps (``cross``) or one (``same``, two
    lanes not both in one mask of ``ordered``)."""
    if sa.size == 1 and sb.size == 1 and sa[0] == sb[0]:
        return None  # one thread
    wa, wb = sa // 32, sb // 32
    for w in np.unique(wa):
        t1 = int(sa[wa == w][0])
        if cross and np.any(wb != w):
            return t1, int(sb[wb != w][0])
        if same:
            for t in sa[wa == w]:
                others = sb[(wb == w) & (sb != t)]
                for m in ordered:
                    if m >> (int(t) & 31) & 1:
                        others = others[(m >> (others & 31) & 1) == 0]
                if others.size:
                    return int(t), int(others[0])
    return None
