"""The large cases of a Triton kernel in the interpreter on a CPU (issue #36).

Each (M, N) tensor lies on the aliasing plan of the GPU path (verifier.gpu.aliasing) mapped in host memory
(verifier.launch.host_alias, _HostMaps), with CPU torch tensors over it, and the interpreter runs only the programs
that own the judged rows (verifier.launch.sparse_grid), once verifier.launch.row_owners has established which those
are on the kernel itself: the launch's grid recorded at the case's rows (no program run) and at PROBE_ROWS, then the
model checked at a few rows in ordinary memory (through ``ordinary``, verifier.launch.harness.execute). Where that
fails, where the launcher does torch work over every element itself (verifier.launch.host_watch), or where an
unexpected launch comes, the case is not run: NotSparse, with the reason. The rest (poison, guards, the judged
rows read back, the unwritten count) is verifier.launch.large's, as on the GPU; a per-row vector output's poison is
counted on the judged rows only (the other rows' programs did not run).
"""
from __future__ import annotations

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import VerifierError
from verifier.inputs import layouts as _lay
from verifier.launch import large as _large
from verifier.launch.outcome import KernelFault, Outcome
from verifier.launch.strides import restrided
from verifier.ops import get_op


def on_host(spec, device: str) -> bool:
    """Whether the large cases run on aliased host memory, on part of the grid: a Triton kernel in the interpreter
    on a host that maps aliased ranges (verifier.launch.host_alias, verifier.launch.row_owners)."""
    from verifier.launch import host_alias

    return spec.interpreted(device) and host_alias.supported()


def drawn_whole(op_name: str, M: int, N: int, params: dict) -> list:
    """The inputs of a large case drawn whole on the host (names and elements): those of BIG elements or more that are
    neither (M, N) data rows nor (M, N) inputs of an op's own maker (verifier.inputs.catalogue.sparse_maker draws
    those as SparseRows)."""
    from verifier.launch.host_watch import BIG

    op = get_op(op_name)
    merged = {**op.params, **(params or {})}
    whole = []
    for t in op.inputs:
        role = op.role(t)
        n = int(np.prod(op.shape_of(t, M, N, merged), dtype=np.float64))
        if role.make is not None:
            sparse = tuple(op.shape_of(t, M, N, merged)) == (M, N)
        else:
            sparse = role.kind == "data" and role.shape == "rows"
        if n >= BIG and not sparse:
            whole.append((t, n))
    return whole


def execute(run, spec, inputs_np: dict, dt, params: dict, device: str, check_poison: bool, layout,
            ordinary) -> Outcome:
    """verifier.launch.large.execute_large on aliased host memory, running only the judged rows' owners;
    ``ordinary``: verifier.launch.harness.execute (the small runs that establish them)."""
    op = get_op(spec.op)
    M, N = inputs_np["x"].shape
    rows = _lay.judged_rows(M, N, layout.wrap, layout.stride)
    owners = _owners(run, spec, op, inputs_np, dt, params, rows, layout, ordinary)
    return _large.execute_large(run, spec, inputs_np, dt, params, device, check_poison, layout,
                                once=lambda *a: _run_on_host(*a, owners))


class _HostMaps:
    """Aliased host memory (verifier.launch.host_alias) for Triton in the interpreter, each range between two aprons
    that a wrapped signed 32-bit offset lands in."""

    def __init__(self):
        from verifier.launch import host_alias

        self.host = host_alias
        self.chunk = host_alias.CHUNK
        self.shared_chunks = host_alias.shared_chunks(self.chunk)

    def buffer(self, plan, itemsize: int):
        return self.host.HostMappedBuffer(plan, apron=self.host.APRON_ELEMENTS * itemsize)

    def torch_view(self, buf, offset: int, shape, stride: int, dtype):
        from verifier import dtypes as _dt

        return buf.torch_view(offset, shape, stride, _dt.torch_dtype(_dt.canonical(dtype)),
                              _dt.numpy_dtype(dtype).itemsize)

    def synchronize(self) -> None:
        pass

    settle = synchronize  # host memory: nothing queued


class _HostMapped(_large._Mapped):
    """_Mapped on host memory where only the judged rows' programs run: the launcher's own torch work over every
    element refused (NotSparse, not a fault), a per-row vector's poison counted on the judged rows."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.poisons = {}  # dtype -> the poison of the case's (M, N) outputs of that dtype

    def output(self, shape, dtype, poison_bits, middle=None, stride=None):
        if len(shape) == 2:  # a library's own (M, C) result of this dtype takes the same poison (library_output)
            self.poisons.setdefault(_dt.canonical(dtype), poison_bits)
        return super().output(shape, dtype, poison_bits, middle, stride)

    def library_output(self, shape, torch_dtype):
        """(view, poison bits) of an (M, C) tensor the launcher's library allocates for its result, laid out as an
        output of the case (its judged rows private and poisoned as an output of its dtype), or None for a dtype
        without a poison (verifier.launch.host_watch.RowWork)."""
        from verifier.launch.outcome import POISON

        from verifier.launch.host_watch import poisoned_name

        name = poisoned_name(torch_dtype)
        if name is None:
            return None
        out = super().output(shape, name, self.poisons.get(name, POISON[name][0]))
        return out.view, out.poison

    def run(self, run, spec, inputs, outputs, params, dt, device):
        from verifier.launch.host_watch import RowWork, refusing_heavy_work
        from verifier.launch.row_owners import NotSparse

        M = next((int(v.shape[0]) for v in outputs.values() if len(getattr(v, "shape", ())) == 2), None)
        rows = RowWork(M, self.judged, self.library_output) if M is not None else None
        try:
            with refusing_heavy_work(rows):
                self.inner.run(run, spec, inputs, outputs, params, dt, device)
        except KernelFault as e:
            if isinstance(e.original, NotSparse):
                raise e.original from None
            raise

    def poison_counts(self, b) -> np.ndarray:
        counts = super().poison_counts(b)
        if not isinstance(b, _large._MappedOut):  # a per-row vector: only the judged rows' programs ran
            counts[np.setdiff1d(np.arange(len(counts)), self.judged)] = 0
        return counts


def _run_on_host(run, spec, op, inputs_np, dt, params, device, which: int, rows, owners) -> tuple:
    """The interpreted kernel on aliased host tensors, running the programs ``owners`` names for the judged rows
    (or, given a selector, those it picks: no pattern is written then); a launch the owners were not established
    for is not run (NotSparse)."""
    from verifier.launch import row_owners as _ro
    from verifier.launch import sparse_grid as _sg

    strays = []

    def owned(launch):
        if strays or not owners.same_kernel(launch) or launch.grid != owners.launch.grid:
            strays.append(launch)
            return []
        strays.append(None)  # one launch seen: a second one is a stray
        return owners.programs(rows)

    select = owners if callable(owners) else owned
    mem = _HostMapped(_large._Torch(device), rows, _HostMaps(), torch_views=True, fill=not callable(owners))
    try:
        with _sg.programs(select):
            result = _large._run_in(mem, run, spec, op, inputs_np, dt, params, device, which, rows)
    finally:
        mem.close()
    stray = [s for s in strays if s is not None]
    if stray:
        raise _ro.NotSparse(f"its launcher launched {stray[0].kernel} on grid {stray[0].grid} where the programs "
                            f"owning rows were established for one launch of {owners.launch.kernel} on grid "
                            f"{owners.launch.grid}")
    return result


_VERIFIED: dict = {}  # the row-owner model's check at a few rows, per kernel, dtype, N, params and model: None (held)
# or why not; the large cases of one kernel share it


def _owners(run, spec, op, inputs_np, dt, params, rows, layout, ordinary):
    """Which programs own the judged rows (verifier.launch.row_owners): the large launch's grid recorded (no
    program runs), then the model checked at a few rows in ordinary memory; NotSparse where none holds."""
    from verifier.launch import row_owners as _ro
    from verifier.launch import sparse_grid as _sg

    M, N = inputs_np["x"].shape
    seen: list = []
    _run_on_host(run, spec, op, restrided(spec, op, inputs_np, dt, params, layout), dt, params, "cpu", 0,
                 rows, _sg.recording(seen))
    large = _ro.one(seen, f"at {M} rows")
    if M <= _ro.ALL_ROWS and large.programs <= _ro.ALL_PROGRAMS:
        return _ro.Owners(large, whole=True)
    held = {t: t if t in op.inouts else getattr(spec, "outputs_alias", {}).get(t) for t in op.outputs}

    def run_small(m, select):
        from verifier.launch.host_watch import poisoned_allocations

        small = _small_inputs(op, inputs_np, M, N, m, params)
        try:
            with _sg.programs(select), poisoned_allocations(m):
                return ordinary(run, spec, small, dt, params, "cpu", check_poison=False), small
        except KernelFault as e:
            raise _ro.NotSparse(f"at {m} rows (to establish which programs own which rows) it raised "
                                f"{type(e.original).__name__}: {str(e.original).splitlines()[0][:160]}") from None
        except VerifierError as e:
            raise _ro.NotSparse(f"at {m} rows (to establish which programs own which rows): {e}") from None

    probe: list = []
    run_small(_ro.PROBE_ROWS, _sg.recording(probe))
    owners = _ro.model(large, M, _ro.one(probe, f"at {_ro.PROBE_ROWS} rows"), _ro.PROBE_ROWS)
    key = (spec.name, str(getattr(spec, "origin", "")), dt.tag, N, repr(sorted(params.items())), owners.axis,
           owners.per_block, owners.rows, large.fn, large.constexprs,
           tuple(large.grid[a] for a in range(3) if a != owners.axis))
    if key not in _VERIFIED:
        from verifier.launch.triton_configs import uncounted

        try:
            with uncounted():  # cached across autotune configs: not the kernel's calls (triton_configs.calls_met)
                _ro.verify(owners, run_small, N, held)
            _VERIFIED[key] = None
        except _ro.NotSparse as e:
            _VERIFIED[key] = e.reason
    if _VERIFIED[key] is not None:
        raise _ro.NotSparse(_VERIFIED[key])
    return owners


def _small_inputs(op, inputs_np: dict, M: int, N: int, m: int, params) -> dict:
    """The first ``m`` rows of the large case's inputs, as ordinary arrays (per-row inputs cut, the others kept)."""
    from verifier.launch import row_owners as _ro

    out = {}
    for name, v in inputs_np.items():
        big, small = tuple(op.shape_of(name, M, N, params)), tuple(op.shape_of(name, m, N, params))
        if isinstance(v, _lay.SparseRows):
            out[name] = v[np.arange(m)]
        elif big == small:
            out[name] = v
        elif big[0] == M and small == (m,) + big[1:]:
            out[name] = np.asarray(v)[:m]
        else:
            raise _ro.NotSparse(f"input {name!r} ({big} at {M} rows) has no row per input row")
    for name in op.outputs:
        big = tuple(op.shape_of(name, M, N, params))
        if not big or big[0] != M:
            raise _ro.NotSparse(f"output {name!r} ({big}) has no row per input row")
    return out
