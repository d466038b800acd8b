"""The launches of a spec at the large shapes it supports (issue #36): M·N past 2^31 and 2^32 elements at every row
length that reaches an entry, rows 2^31 + 64 elements apart, and rows filling 64 GiB per tensor (what one GPU
holds; no GPU case runs it). The offset check (verifier.lint.offsets) evaluates
a 32-bit offset's range with their grids and argument values: a wrap there is a defect at a shape the spec
accepts; a spec that refuses those shapes has declared the limit. No tensor exists: the launches are evaluated on
model tensors (verifier.launch.cuda.model_tensors), as the build step and lint's launch facts are."""
from __future__ import annotations

import dataclasses

import numpy as np

from verifier.errors import SpecError, VerifierError
from verifier.lint.issues import PROBE, LargeLaunch
from verifier.lint.nulls import null_slots

WRAP31, WRAP32 = 2 ** 31, 2 ** 32
# Beyond the GPU cases: rows filling 64 GiB per tensor, which one GPU holds (an H200 has 141 GB). An offset kept in
# 32 bits of 16-byte vectors wraps only past 2^31 vectors (32 GiB): no large case reaches it, real batches do.
LARGEST, LARGEST_BYTES = "largest_in_memory", 2 ** 36
_INT_KINDS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def param_label(a, i: int) -> str:
    from verifier.declare.args import Scalar, as_arg, stride_of

    s = stride_of(a)
    if s is not None:
        return f"{s.tensor}.stride"
    if isinstance(a, str):
        return a
    try:
        arg = as_arg(a)
    except SpecError:
        return repr(a)
    if isinstance(arg, Scalar):  # a number: its value differs between the launches, the label is shared by them
        return arg.value if isinstance(arg.value, str) else f"argument {i} ({arg.kind})"
    return type(arg).__name__


def _values(launch, bound) -> tuple:
    """Each argument's integer value; a struct's: ((byte offset, value), ...) of its integer members; None for
    pointers and floats."""
    from verifier.declare.args import as_arg, scalar_size

    out = []
    for a, v in zip(launch.args, bound):
        try:
            leaves = as_arg(a).leaves()
        except SpecError:
            leaves = []
        if isinstance(v, (bytes, bytearray)):  # a Struct, bound as its bytes in C layout
            out.append(tuple((off, int.from_bytes(v[off:off + scalar_size(kind)], "little", signed=kind[0] == "i"))
                             for off, kind, _ in leaves if kind in _INT_KINDS))
            continue
        ok = len(leaves) == 1 and leaves[0][1] in _INT_KINDS and isinstance(v, (np.integer, int))
        out.append(int(v) if ok else None)
    return tuple(out)


def _shapes(spec, dt):
    """(case, M, N, stride or None): the large shapes, at every row length that reaches an entry."""
    from verifier.inputs import large_family as lf
    from verifier.inputs import layouts as lay
    from verifier.inputs.cases import probe_lengths

    from verifier import dtypes as _dtypes

    lengths = sorted(set(probe_lengths(spec, dt)) | set(lay.LARGE_N) | set(lf.ROWS_N))
    itemsize = _dtypes.numpy_dtype(dt.input).itemsize
    for N in lengths:
        yield lf.LARGE_CASE, lay.large_rows(N, WRAP31), N, None
        yield lf.LARGE_2POW32, lay.large_rows(N, WRAP32), N, None
        yield lf.ROW_STRIDE_2POW31, lf.STRIDE_ROWS, N, lay.WRAP + lay.ROW_PAD
        yield LARGEST, max(1, LARGEST_BYTES // (N * itemsize)), N, None


def probe_launch(spec, launch, M: int, N: int, dt, params, tensors: dict) -> LargeLaunch:
    """The LargeLaunch (case PROBE) of one launch at a probe shape, on model ``tensors``; an argument the spec's
    launch cannot bind there has no value (None), so nothing is decided from it."""
    from verifier.launch.cuda import bind_model

    try:
        values = _values(launch, bind_model(spec, launch, M, N, dt, params, tensors))
    except (VerifierError, ArithmeticError, TypeError, ValueError):  # the build step reports a launch it cannot bind
        values = (None,) * len(launch.args)
    grid = tuple(int(x) for x in launch.grid) + (1,) * (3 - len(launch.grid))
    block = tuple(int(x) for x in launch.block) + (1,) * (3 - len(launch.block))
    return LargeLaunch(PROBE, M, N, grid, block, values, tuple(param_label(a, i) for i, a in enumerate(launch.args)),
                       null_slots(launch.args))


def large_launches(spec, dts) -> tuple:
    """({entry: (LargeLaunch, ...)}, why the large shapes are refused, why their launches cannot be made): the
    launches at the large shapes that ``supports`` accepts for any of ``dts``; the reason is '' unless ``supports``
    refuses every one of them; the last is '' unless no launch could be made and the spec's launches failed at a
    shape ``supports`` accepts (an argument its C type cannot hold: ggml's ``int ne_elements`` given M·N)."""
    from verifier.declare.args import LaunchLayout, alignment_of
    from verifier.inputs.layouts import CONTIGUOUS
    from verifier.declare.layout import takes_layout
    from verifier.launch.cuda import bind_model, launches_for, model_tensors, strided_tensors

    out: dict = {}
    refused, unbound, accepted = "", "", False
    params = spec.op_params()
    takes = takes_layout(spec.launches)
    for dt in dts:
        for case, M, N, stride in _shapes(spec, dt):
            try:
                why = spec.check_supported(M, N, dt)
                if why is not None:
                    refused = refused or f"{case} at {M}x{N}: {why}"
                    continue
                tensors = model_tensors(spec, M, N, dt, params, CONTIGUOUS)
                if stride is not None:
                    wide = strided_tensors(spec, M, N, dt, params)  # the tensors whose stride a launch passes
                    if not wide:
                        continue  # no launch takes a row stride: the rows are N apart, as in the other cases
                    tensors = {t: dataclasses.replace(m, stride=stride) if t in wide else m for t, m in tensors.items()}
                layout = None
                if takes:
                    layout = LaunchLayout({t: alignment_of(m.address) for t, m in tensors.items()},
                                          {t: m.stride for t, m in tensors.items() if m.stride is not None})
                for launch in launches_for(spec, M, N, dt, params, layout):
                    bound = bind_model(spec, launch, M, N, dt, params, tensors)
                    grid = tuple(int(x) for x in launch.grid) + (1,) * (3 - len(launch.grid))
                    block = tuple(int(x) for x in launch.block) + (1,) * (3 - len(launch.block))
                    ll = LargeLaunch(case, M, N, grid, block, _values(launch, bound),
                                     tuple(param_label(a, i) for i, a in enumerate(launch.args)), null_slots(launch.args))
                    out.setdefault(launch.entry, {})[ll] = None
                    accepted = True
            except (VerifierError, ArithmeticError, TypeError, ValueError) as e:
                # the spec's supports / launches / workspace counts failing at this shape: the large case reports
                # it where it runs (and the probe shapes, where the build step binds every launch); said here too,
                # lest a shape supports() accepted read as refused
                if why is None and not unbound:
                    unbound = f"{case} at {M}x{N}: {getattr(e, 'message', None) or e}"
                continue
    if accepted:
        return {e: tuple(ls) for e, ls in out.items()}, "", ""
    return {}, "" if unbound else refused, unbound
