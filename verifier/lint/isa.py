"""What the static checks know about PTX instructions: the instruction names of the PTX ISA (an instruction
outside them is not read: its function is reported as not analysed, never passed), the state space an access
names, the warp-synchronous collectives and their member masks, and what is parsed but not modelled.
"""
from __future__ import annotations

from typing import Optional

# Every instruction name of the PTX ISA up to 8.8 (the first component of the opcode).
KNOWN = frozenset("""
abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra brev brkpt brx call
clusterlaunchcontrol clz cnot copysign cos cp createpolicy cvt cvta discard div dp2a dp4a elect ex2 exit fence fma
fns getctarank griddepcontrol isspacep istypep ld ldmatrix ldu lg2 lop3 mad mad24 madc mapa match max mbarrier
membar min mma mov movmatrix mul mul24 multimem nanosleep neg not or pmevent popc prefetch prefetchu prmt rcp red
redux rem ret rsqrt sad selp set setmaxnreg setp shf shfl shl shr sin slct sqrt st stackrestore stacksave stmatrix
sub subc suld suq sured sust szext tanh tcgen05 tensormap testp tex tld4 trap txq vabsdiff vabsdiff2 vabsdiff4
vadd vadd2 vadd4 vavrg2 vavrg4 vmad vmax vmax2 vmax4 vmin vmin2 vmin4 vote vset vset2 vset4 vshl vshr vsub vsub2
vsub4 wgmma wmma xor
""".split())

WARP_COLLECTIVES = ("shfl", "vote", "redux", "match", "elect")  # '.sync' forms: a member mask, all its lanes meet
MASKED_BASES = frozenset(WARP_COLLECTIVES + ("bar",))  # the bases of the instructions mask_arg finds a mask in
SPACES = ("global", "shared", "local", "param", "const")


def space(parts: tuple) -> str:
    """The state space an access names: 'shared' (also ``.shared::cta``), 'cluster' (``.shared::cluster``:
    distributed shared memory, possibly another block's), a plain space, or 'generic'."""
    for p in parts[1:]:
        if p in SPACES:
            return p
        if p.startswith("shared::"):
            return "shared" if p == "shared::cta" else "cluster"
    return "generic"


def mask_arg(ins) -> Optional[str]:
    """The member-mask operand of a warp-synchronous instruction (None for other instructions)."""
    if ins.parts[0] in WARP_COLLECTIVES and "sync" in ins.parts and ins.args:
        return ins.args[-1]
    if ins.op.startswith("bar.warp.sync") and ins.args:
        return ins.args[0]
    return None


def is_cp_async(ins) -> bool:
    """A non-bulk ``cp.async`` (a shared-memory write that lands at a later ``cp.async.wait_*``)."""
    p = ins.parts
    return p[0] == "cp" and len(p) > 2 and p[1] == "async" and p[2] in ("ca", "cg") and "shared" in p


def cp_async_wait(ins) -> Optional[int]:
    """Groups a ``cp.async.wait_group N`` may leave in flight (0 for ``wait_all``); None for other instructions."""
    p = ins.parts
    if p[0] != "cp" or len(p) < 3 or p[1] != "async":
        return None
    if p[2] == "wait_all":
        return 0
    if p[2] == "wait_group":
        try:
            return int(ins.args[0], 0)
        except (IndexError, ValueError):
            return 1
    return None


_CHECKED = frozenset("mbarrier cp st red bar barrier ld atom wgmma sust sured multimem tensormap tcgen05 wmma".split())
NOT_FOLLOWED_BASES = _CHECKED | {"call", "brx"}  # the instructions a not-followed warning can be about
# The CUDA runtime's device functions that assert() and printf() compile to: they print (__assertfail then ends the
# kernel), touching no shared memory, with no barrier and no warp collective: nothing in them for the checks to follow.
SYSTEM_CALLS = frozenset({"__assertfail", "vprintf"})


def call_target(ins) -> Optional[str]:
    """The function a ``call`` instruction calls (its first operand that is not a parenthesized list), or None."""
    if ins.base != "call":
        return None
    return next((a.strip().rstrip(",") for a in ins.args if not a.strip().startswith("(")), None)


def not_modelled(ins) -> Optional[str]:
    """Why the checks cannot follow what ``ins`` does to shared memory or to the order of the block's threads,
    or None. Each is a ``not-followed`` warning of the entry."""
    p, base = ins.parts, ins.base
    if base not in _CHECKED or len(p) < 2:
        return None
    if base == "mbarrier" or (base == "cp" and len(p) > 2 and p[2] == "bulk") or (base == "cp" and p[1] == "reduce"):
        return "is an mbarrier-tracked asynchronous copy or barrier, which the hazard check does not model"
    if base in ("st", "red") and len(p) > 1 and p[1] in ("async", "bulk"):
        return "writes shared memory asynchronously (completion through an mbarrier), which is not modelled"
    if base in ("bar", "barrier") and len(p) > 1 and p[1] == "arrive":
        return "arrives at a named barrier without waiting: producer/consumer barrier protocols are not modelled"
    if space(p) == "cluster" and base in ("ld", "st", "atom", "red"):
        return "accesses distributed shared memory of the cluster, whose races between blocks are not checked"
    if base in ("wgmma", "sust", "sured", "multimem", "tensormap", "tcgen05") or \
            (base == "wmma" and len(p) > 1 and p[1] in ("load", "store")):
        return "accesses memory through a path (matrix, surface or multicast) the hazard check does not model"
    return None
