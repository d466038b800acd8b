"""Shared memory read where no thread of the block ever writes, for one block shape.

`__shared__` memory starts undefined: it holds what an earlier block on the SM left. A full-tile
``cub::BlockReduce<float, 1024>::Reduce(v, op)`` (no valid count) launched with fewer than 1024 threads has thread 0
fold the aggregates of all 32 warps, most of which do not exist (vLLM's dynamic_scaled_int8_quant at
hidden_size < 1024): the result depends on stale memory. At multiples of 32 no lane is missing, so the
inactive-lanes check says nothing there.

Decided only where it can be: every write to the variable has an address that is the variable plus a per-thread
value known at the block shape (a write under an unknown guard counts as made by every thread), the read's too,
and the entry has no other way to write shared memory (generic stores, atomics, async or bulk copies, calls).
A read of bytes no write covers is reported when its value reaches an output (verifier.lint.absent's taint: a
value a select or a guard discards is no defect).
"""
from __future__ import annotations

import numpy as np

from verifier.lint import isa, races
from verifier.lint.absent import AbsentReads
from verifier.lint.cfg import EXIT
from verifier.lint.issues import Issue, short_name


def unwritten_reads(an, sem) -> list:
    if any(_maybe_shared(ins) for ins in an.fn.instrs):
        return []
    acc = races.shared_accesses(an)
    if any(kind not in ("read", "write") for _, kind, _, _ in acc):
        return []
    n = sem.nthreads
    live = _live(an, sem)
    acc = [a for a in acc if an.cfg.block_of[a[0].idx] in live]  # a side no thread takes at this shape runs not
    written: dict = {}  # variable -> set of byte offsets some thread writes; None where one is not known
    reads = []
    for ins, kind, addr, width in acc:
        place = _place(an, sem, ins, addr)
        if kind == "write":
            if place is None:
                return []  # a write we cannot place may cover anything
            var, x, runs = place
            if var is None:
                continue
            got = written.setdefault(var, set())
            for t in np.nonzero(runs)[0]:
                got.update(range(int(x[t]), int(x[t]) + width))
        elif place is not None and place[0] is not None:
            reads.append((ins, width, place))
    out, taint = [], None
    for ins, width, (var, x, runs) in reads:
        got = written.get(var, set())
        bad = np.array([bool(runs[t]) and any(b not in got for b in range(int(x[t]), int(x[t]) + width))
                        for t in range(n)])
        if not bad.any():
            continue
        seed = an.values.def_node.get((ins.idx, 0))
        if seed is None:
            continue
        taint = taint or AbsentReads(an, sem)
        taint.sinks()
        hit = taint._reach(seed, bad)
        if hit is None:
            continue
        sink, threads, how = hit
        t = int(np.nonzero(bad)[0][0])
        out.append(Issue(
            "unwritten-shared", "error",
            f"`{ins.op}` in block {'x'.join(map(str, sem.block))}: thread {t} reads {short_name(var)}+{int(x[t])}, "
            f"which no thread of the block writes (shared memory starts as whatever an earlier block left), and "
            f"the value reaches {how}; a block-wide reduction sized for more threads than the launch has (cub's "
            f"BlockReduce<T, 1024>::Reduce without a valid count) reads the partials of warps that do not exist: "
            f"pass the thread count (Reduce(v, op, blockDim.x)) or size it to the block",
            at=ins.idx, other=sink, other_role="output"))
    return out


def _live(an, sem) -> set:
    """The CFG blocks some thread can reach at this block shape (branches on the shape taken one way)."""
    dead, seen, todo = sem.dead_edges(), {0}, [0]
    while todo:
        b = todo.pop()
        for s, e in an.cfg.blocks[b].succs:
            if s != EXIT and (b, e) not in dead and s not in seen:
                seen.add(s)
                todo.append(s)
    return seen


def _maybe_shared(ins) -> bool:
    """Whether an instruction may write shared memory without being one of races.shared_accesses' forms."""
    base = ins.parts[0]
    if base in ("call", "brx", "wmma", "tcgen05", "mbarrier"):
        return True
    if base in ("st", "atom", "red"):
        return not any(p in ins.parts for p in ("global", "shared", "local", "param"))  # generic: maybe shared
    return base.startswith("cp") and "shared" in ".".join(ins.parts) and not isa.is_cp_async(ins)


def _place(an, sem, ins, addr):
    """(variable or None if not one static variable, per-thread byte offset, threads that run it) or None."""
    terms, rest = sem.decompose(addr)
    base, other = races._base_split(an, terms)
    if other or len(base) != 1 or list(base.values()) != [1]:
        return None
    var = next(iter(base))
    if var == "<dynamic shared memory>":  # extern arrays alias one another: not followed
        return None, None, None
    x = sem.evaluate(rest) if rest is not None else np.zeros(sem.nthreads, dtype=np.int64)
    if x is None:
        return None
    runs, unknown = sem.guard_mask(ins)
    if unknown:
        if ins.parts[0] == "ld":
            return None
        runs = np.ones(sem.nthreads, dtype=bool)
    return var, x, runs
