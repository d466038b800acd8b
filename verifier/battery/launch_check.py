"""Launch validation without a GPU, part of the build step: the spec's launches evaluated at the shapes the battery
uses (every probe row length at M = 4 and every catalogue case of the level, each case in its own memory layout,
verifier.launch.cuda.model_tensors), and each launch checked on any machine:

- its arguments bind: tensor names the op has, strides of 2-D tensors only, pointer offsets within their tensor,
  values in range for their C type (verifier.launch.cuda.bind_args on model tensors);
- its block has 1 to 1024 threads, at most 1024 x 1024 x 64; its grid at least 1 and at most 2^31-1 x 65535 x 65535;
- its dynamic shared memory plus the entry's static shared memory fits the arch's opt-in limit (SMEM_OPTIN);
- its arguments match the compiled entry's parameters (verifier.toolchain.entry_params, from the PTX): the count,
  each size, the alignment of what is passed by value, and float against integer for scalars.

Each problem is one ``build`` finding naming the launch, its entry and the first shape it was seen at (a launch
that cannot be made is never run: the battery stops after the build step). A launches() that raises is the
kernel's error as everywhere else: it propagates.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from verifier.declare.args import Pointer, Scalar, Stride, Struct, Workspace, as_arg
from verifier.errors import SpecError
from verifier.inputs import layouts as _lay
from verifier.inputs.cases import cases_for, probe_lengths
from verifier.launch import cuda as cuda_runner
from verifier.results.findings import Finding
from verifier.results.options import repro_line

BLOCK_THREADS = 1024
BLOCK_DIMS = (1024, 1024, 64)
GRID_DIMS = (2 ** 31 - 1, 65535, 65535)
PROBE_ROWS = 4  # the M the build step has always evaluated launches at (with every probe row length)
# Where supports() refuses PROBE_ROWS rows at a length (a kernel taking rows in whole blocks of R, as Megatron's
# upper-triangular softmax: batches x N rows, batches a multiple of its rows per block), the first of these it
# accepts: the build step reaches the entries verifier lint analyses (its PROBE_M), else none had its resources checked.
MORE_ROWS = (1, 64, 4096)
# Dynamic + static shared memory a block may opt in to, per compute capability (CUDA C++ Programming Guide,
# "Technical Specifications per Compute Capability"), in bytes.
SMEM_OPTIN = {70: 96 * 1024, 72: 96 * 1024, 75: 64 * 1024, 80: 163 * 1024, 86: 99 * 1024, 87: 163 * 1024,
              89: 99 * 1024, 90: 227 * 1024, 100: 227 * 1024, 101: 227 * 1024, 103: 227 * 1024, 110: 227 * 1024,
              120: 99 * 1024, 121: 99 * 1024}
_ARCH = re.compile(r"^(?:sm|compute)_(\d+)")
ARGS_FIX = ("make the launch's args match the kernel's parameters, in order: a tensor name or Pointer per pointer, "
            "Scalar(kind, value) with the parameter's C type, Struct([...]) for a struct passed by value")


def smem_optin(arch: str) -> Optional[int]:
    """The opt-in shared memory limit of ``arch`` ('sm_90', 'sm_90a'), or None for an arch the table lacks
    (older than sm_70): then not checked."""
    m = _ARCH.match(arch or "")
    if not m:
        return None
    cc = int(m.group(1))
    known = [c for c in SMEM_OPTIN if c <= cc]
    return SMEM_OPTIN[max(known)] if known else None


@dataclass
class Evaluated:
    """The launches of one call the battery makes: dtype, shape, the case's layout and its model tensors."""

    dt: object
    M: int
    N: int
    layout: str
    launches: list
    tensors: dict

    @property
    def where(self) -> str:
        return f"M={self.M}, N={self.N}, {self.dt.tag}, {self.layout} layout"


def shapes(spec, dt, level: str) -> list:
    """(M, N, layout kind) the battery launches at for ``dt``: every probe row length at PROBE_ROWS rows (or the first
    of MORE_ROWS supports() accepts), then every
    catalogue case of ``level`` the kernel accepts (the gate's layout contracts respected)."""
    from verifier.battery import gate

    out = []
    for N in probe_lengths(spec, dt):
        M = next((m for m in (PROBE_ROWS, *MORE_ROWS) if spec.check_supported(m, N, dt) is None), None)
        if M is None:  # rows in whole N x N blocks (verifier.lint.probes.probe_rows)
            from verifier.lint.probes import SQUARE_M

            M = next((k * N for k in SQUARE_M if spec.check_supported(k * N, N, dt) is None), None)
        if M is not None:
            out.append((M, N, _lay.CONTIGUOUS))
    for c in cases_for(spec, dt, level):
        closed = gate.before_inputs(spec, dt, c.name, c.M, c.N, None if c.layout.large else c.layout, device=None)
        if closed is None and (c.M, c.N, c.layout.kind) not in out:
            out.append((c.M, c.N, c.layout.kind))
    return out


def evaluate(spec, dts, level: str) -> list:
    """Evaluated launches of the spec at every shape of ``shapes`` (a launches() that raises propagates)."""
    params = spec.op_params()
    out = []
    for dt in dts:
        for M, N, kind in shapes(spec, dt, level):
            layout = cuda_runner.model_layout(spec, M, N, dt, params, kind)
            launches = cuda_runner.launches_for(spec, M, N, dt, params, layout)
            out.append(Evaluated(dt, M, N, kind, launches, cuda_runner.model_tensors(spec, M, N, dt, params, kind)))
    return out


class Problems:
    """Problems found, each said once with the first shape it was seen at, how many more, and the arches."""

    def __init__(self):
        self._seen: dict = {}  # message -> [fix, [where...], [arch...]]

    def add(self, message: str, fix: str, where: str, arch: Optional[str] = None) -> None:
        entry = self._seen.setdefault(message, [fix, [], []])
        if where not in entry[1]:
            entry[1].append(where)
        if arch and arch not in entry[2]:
            entry[2].append(arch)

    def __bool__(self):
        return bool(self._seen)

    def report(self, spec, opts, report) -> None:
        for message, (fix, wheres, arches) in self._seen.items():
            more = f"; and {len(wheres) - 1} more shape{'s' if len(wheres) > 2 else ''}" if len(wheres) > 1 else ""
            prefix = f"[{', '.join(arches)}] " if arches else ""
            report.add(Finding("build", f"{prefix}{message} (at {wheres[0]}{more})\n  fix: {fix}",
                               kernel=spec.name, repro=repro_line(spec, opts)))


def _dims(v) -> Optional[tuple]:
    """A grid or block as 1-3 whole numbers (a tuple or list), or None when it is not one."""
    if not isinstance(v, (tuple, list)) or not 1 <= len(v) <= 3:
        return None
    if any(isinstance(x, bool) or not hasattr(x, "__index__") for x in v):
        return None
    return tuple(int(x) for x in v)


def _geometry(i: int, launch) -> list:
    """(message, fix) of every problem of one launch's grid, block and dynamic shared memory size."""
    name = f"launch {i} of entry {launch.entry}"
    out = []
    block, grid = _dims(launch.block), _dims(launch.grid)
    axes = "xyz"
    if block is None:
        out.append((f"{name}: block {launch.block!r} is not 1 to 3 whole numbers", "a tuple of 1 to 3 ints, e.g. block=(256,)"))
    else:
        threads = 1
        for b in block:
            threads *= b
        too_many = threads > BLOCK_THREADS  # said once for the whole block; a dimension's own limit otherwise
        for a, (b, top) in enumerate(zip(block, BLOCK_DIMS)):
            if b < 1 or (b > top and not too_many):
                out.append((f"{name}: block {block}: dimension {axes[a]} is {b}; it must be 1 .. {top}",
                            "block dimensions are at most 1024, 1024, 64, and 1024 threads in all"))
        if too_many:
            out.append((f"{name}: block {block} has {threads} threads; a block holds at most {BLOCK_THREADS}",
                        "launch fewer threads per block (more blocks, or a loop over the row)"))
    if grid is None:
        out.append((f"{name}: grid {launch.grid!r} is not 1 to 3 whole numbers", "a tuple of 1 to 3 ints, e.g. grid=(M,)"))
    else:
        for a, (g, top) in enumerate(zip(grid, GRID_DIMS)):
            if not 1 <= g <= top:
                out.append((f"{name}: grid {grid}: dimension {axes[a]} is {g}; it must be 1 .. {top}",
                            "grid dimensions are at least 1 and at most 2^31-1, 65535, 65535 (refuse the shape in "
                            "supports(), or loop over rows in the kernel)"))
    if isinstance(launch.smem, bool) or not hasattr(launch.smem, "__index__") or int(launch.smem) < 0:
        out.append((f"{name}: smem={launch.smem!r} is not a byte count", "pass smem as a whole number of bytes >= 0"))
    if not isinstance(getattr(launch, "cooperative", False), bool):
        out.append((f"{name}: cooperative={launch.cooperative!r} is not a bool",
                    "pass cooperative=True for a kernel the host launches with cudaLaunchCooperativeKernel"))
    return out


def check_launches(spec, evaluated: list, problems: Problems) -> None:
    """Geometry and argument binding of every evaluated launch (no arch, no build needed)."""
    params = spec.op_params()
    for ev in evaluated:
        for i, launch in enumerate(ev.launches):
            for message, fix in _geometry(i, launch):
                problems.add(message, fix, ev.where)
            try:
                cuda_runner.bind_model(spec, launch, ev.M, ev.N, ev.dt, params, ev.tensors)
            except SpecError as e:
                text = e.message.replace(f"kernel {spec.name}: launch {launch.entry}", f"launch {i} of entry {launch.entry}")
                problems.add(text, e.fix or ARGS_FIX, ev.where)


def check_smem(evaluated: list, symbols: dict, resources: dict, arch: str, problems: Problems) -> None:
    """Dynamic plus static shared memory of every launch within ``arch``'s opt-in limit."""
    limit = smem_optin(arch)
    if limit is None:
        return
    for ev in evaluated:
        for i, launch in enumerate(ev.launches):
            if isinstance(launch.smem, bool) or not hasattr(launch.smem, "__index__"):
                continue
            r = resources.get(symbols.get(launch.entry))
            static = r.smem_bytes if r is not None else 0
            if int(launch.smem) + static > limit:
                extra = f" + {static} static" if static else ""
                problems.add(f"launch {i} of entry {launch.entry} asks for {int(launch.smem)} bytes of dynamic shared "
                             f"memory{extra}; {arch} allows at most {limit} bytes per block",
                             "ask for less, or refuse the shape in supports()", ev.where, arch)


def _declared(launch) -> Optional[list]:
    try:
        return [as_arg(a) for a in launch.args]
    except SpecError:
        return None  # check_launches reports it


def _kind_clash(arg, param) -> Optional[str]:
    """Why a scalar argument cannot be the scalar parameter of the same size (float against integer)."""
    if param.array:
        return None
    declared_float = isinstance(arg, Scalar) and arg.kind.startswith("float")
    if isinstance(arg, (Scalar, Stride, Pointer, Workspace)) and declared_float != param.is_float:
        return "a floating-point" if param.is_float else "an integer"
    return None


def check_parameters(spec, evaluated: list, symbols: dict, params_of: dict, arch: str, problems: Problems) -> None:
    """Each launch's arguments against the parameter list of its compiled entry (``params_of``: symbol -> params,
    from the PTX)."""
    for ev in evaluated:
        for i, launch in enumerate(ev.launches):
            symbol = symbols.get(launch.entry)
            if symbol is None or symbol not in params_of:
                continue  # not in the cubin: the build step's entry check says so
            declared, taken = _declared(launch), params_of[symbol]
            if declared is None:
                continue
            args = ", ".join(a.describe() for a in declared) or "none"
            params = ", ".join(p.describe() for p in taken) or "none"
            both = f"arguments ({args}) vs parameters ({params})"
            name = f"launch {i} of entry {launch.entry}"
            if len(declared) != len(taken):
                problems.add(f"{name} passes {len(declared)} argument{'s' * (len(declared) != 1)} ({args}) but "
                             f"{launch.entry} takes {len(taken)} parameter{'s' * (len(taken) != 1)} ({params})",
                             ARGS_FIX, ev.where, arch)
                continue
            for j, (a, p) in enumerate(zip(declared, taken)):
                if a.nbytes != p.size:
                    problems.add(f"{name}: argument {j} ({a.describe()}) is {a.nbytes} bytes but parameter {j} of "
                                 f"{launch.entry} is {p.size} bytes ({p.describe()}); {both}", ARGS_FIX, ev.where, arch)
                elif isinstance(a, Struct) and p.array and a.align != p.align:
                    problems.add(f"{name}: argument {j} ({a.describe()}) is aligned to {a.align} bytes but parameter "
                                 f"{j} of {launch.entry} to {p.align}; {both}",
                                 f"declare Struct([...], align={p.align}) for a struct __align__({p.align}), or check "
                                 "the member types", ev.where, arch)
                elif (clash := _kind_clash(a, p)) is not None:
                    problems.add(f"{name}: argument {j} ({a.describe()}) goes to {clash} parameter {j} of "
                                 f"{launch.entry} ({p.describe()}); {both}", ARGS_FIX, ev.where, arch)
