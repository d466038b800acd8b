"""What the lint is told about how a spec launches each entry (``launch_facts`` -> EntryFacts): its launches at
the probe shapes (PROBE_M rows, MANY_ROWS where M x N stays within MANY_ROWS_ELEMENTS, whole N x N blocks where
supports() takes none of those, at every probe length the battery uses), with their block shapes, largest grid,
null pointers, parameter labels and argument values, and its launches at the large shapes (verifier.lint.large)."""
from __future__ import annotations

import math

from verifier.errors import SpecError
from verifier.lint.issues import EntryFacts
from verifier.lint.nulls import null_slots

PROBE_M = (1, 4, 64, 4096)  # rows: one block, a few, many (grids of warp-per-row kernels grow with M)
# and more than a grid's y / z limit, past host thresholds on the row count (ONNX Runtime's softmax takes another
# kernel from 8192 rows), where M x N stays within the 2^30 elements of 4096 x 262144: a spec's integer arguments
# (M * N as int32) hold there as at the other probes; the shapes past it are the large ones' (verifier.lint.large)
MANY_ROWS, MANY_ROWS_ELEMENTS = 65537, 2 ** 30
# Where supports() takes none of them at a row length N: rows in whole N x N blocks (Megatron's upper-triangular
# softmax takes batches x N rows; at N >= 8192 no PROBE_M is a multiple of N, and its entries were never analysed)
SQUARE_M = (1, 4)  # multiples of N


def probe_rows(spec, N: int, dt) -> list:
    """The probe row counts supports() accepts at N: those of PROBE_M (and MANY_ROWS up to MANY_ROWS_ELEMENTS
    elements), else the first multiple of N of SQUARE_M."""
    many = (MANY_ROWS,) if MANY_ROWS * N <= MANY_ROWS_ELEMENTS else ()
    rows = [M for M in PROBE_M + many if spec.check_supported(M, N, dt) is None]
    return rows or [M for M in (k * N for k in SQUARE_M) if spec.check_supported(M, N, dt) is None][:1]


_FACTS: dict = {}  # (id(spec), dtype tags) -> (spec, facts): plan() and lint_spec() ask for one spec's facts in turn


def launch_facts(spec, dts) -> dict:
    """entry -> EntryFacts from the spec's launches at the probe shapes its supports() accepts. No tensor exists
    here: a launches(..., layout) is evaluated on the layouts the cases give (verifier.launch.cuda.model_layout:
    contiguous and 256-byte aligned, strided rows, one element past 16 bytes), so every path a host dispatch can
    pick is analysed."""
    key = (id(spec), tuple(dt.tag for dt in dts))
    got = _FACTS.get(key)
    if got is not None and got[0] is spec:  # the same spec object (it is held here, so its id is not reused)
        return got[1]
    if len(_FACTS) > 512:
        _FACTS.clear()
    facts = _launch_facts(spec, dts)
    _FACTS[key] = (spec, facts)
    return facts


def _launch_facts(spec, dts) -> dict:
    from verifier.inputs.cases import probe_lengths
    from verifier.inputs.layouts import CONTIGUOUS, STRIDED, UNALIGNED
    from verifier.declare.layout import takes_layout
    from verifier.launch.cuda import launches_for, model_layout, model_tensors
    from verifier.lint.large import param_label, probe_launch

    blocks: dict = {}
    grids: dict = {}
    nulls: dict = {}  # entry -> the pointers null in every launch of it so far
    labels: dict = {}  # entry -> how its first launch names each parameter (for messages)
    probes: dict = {}  # entry -> {LargeLaunch of each launch at a probe shape: None} (its argument values)
    for dt in dts:
        for N in probe_lengths(spec, dt):  # every declared size class, as the build step
            for M in probe_rows(spec, N, dt):
                kinds = (CONTIGUOUS, STRIDED, UNALIGNED) if takes_layout(spec.launches) else (CONTIGUOUS,)
                launches = [(launch, kind) for kind in kinds
                            for launch in launches_for(spec, M, N, dt, spec.op_params(),
                                                       model_layout(spec, M, N, dt, spec.op_params(), kind))]
                tensors: dict = {}
                for launch, kind in launches:
                    b, g = _dims(spec, launch, "block"), math.prod(_dims(spec, launch, "grid"))
                    if kind not in tensors:
                        tensors[kind] = model_tensors(spec, M, N, dt, spec.op_params(), kind)
                    probes.setdefault(launch.entry, {})[
                        probe_launch(spec, launch, M, N, dt, spec.op_params(), tensors[kind])] = None
                    blocks.setdefault(launch.entry, set()).add(b)
                    grids[launch.entry] = max(grids.get(launch.entry, 0), g)
                    here = null_slots(launch.args)
                    nulls[launch.entry] = nulls.get(launch.entry, here) & here
                    labels.setdefault(launch.entry, tuple(param_label(a, i) for i, a in enumerate(launch.args)))
    from verifier.lint.large import large_launches

    large, refused, unbound = large_launches(spec, dts)
    probed = set(blocks)
    for e, ls in large.items():  # a tensor passed at a large shape makes the pointer live too
        for ll in ls:
            if e not in probed:  # an entry only the large shapes reach (a 64-bit-index variant): analysed at them
                blocks.setdefault(e, set()).add(tuple(int(x) for x in ll.block) + (1,) * (3 - len(ll.block)))
                grids[e] = max(grids.get(e, 0), math.prod(int(x) for x in ll.grid))
                nulls.setdefault(e, ll.nulls)
            nulls[e] &= ll.nulls
    return {e: EntryFacts(blocks=tuple(sorted(bs)), max_grid_blocks=grids[e], large=large.get(e, ()), refused=refused,
                          unbound=unbound, nulls=tuple(sorted(nulls[e])), labels=labels.get(e, ()),
                          probes=tuple(probes.get(e, ())))
            for e, bs in blocks.items()}


def _dims(spec, launch, what: str) -> tuple:
    """A launch's grid or block as (x, y, z); one that is not 1 to 3 whole numbers is the spec's error (not the
    run's: the build step's launch check says the same)."""
    v = getattr(launch, what)
    if not isinstance(v, (tuple, list)) or not 1 <= len(v) <= 3 or any(
            isinstance(x, bool) or not hasattr(x, "__index__") for x in v):
        raise SpecError(f"kernel {spec.name}: launch of entry {launch.entry}: {what} {v!r} is not 1 to 3 whole numbers",
                        fix=f"a tuple of 1 to 3 ints, e.g. {what}=" + ("(M,)" if what == "grid" else "(256,)"))
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))
