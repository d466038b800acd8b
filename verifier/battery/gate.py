"""The per-case gate: whether one input of one kernel and dtype is run, and if not, why — the same answer for
``verifier check`` (a note, the case not run) and the pytest plugin (the test skipped with the same words).

In order: the kernel's ``supports()`` (refused by design), the case's memory layout (verifier.inputs.layouts: a
strided case for a kernel declaring ``layout="contiguous"`` or a CUDA kernel whose launches pass no row stride, an
unaligned one for a kernel declaring ``alignment=16``, the large-index case without a GPU holding it), the Triton
interpreter's known gaps (what the interpreter cannot represent is not the kernel's fault; the compiled path on a
GPU checks it), the declared contracts (inputs holding NaN / inf a kernel declares unsupported). Nothing is
dropped silently: each reason is said where the case would have run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from verifier import dtypes as _dt
from verifier.declare import contracts as _contracts
from verifier.inputs import layouts as _lay

REFUSED, INTERPRETER, CONTRACT, DEVICE = "refused", "interpreter", "contract", "device"
NO_STRIDE = "not checked: the launch passes no row stride (name one, e.g. 'x.stride', to be checked on strided rows)"


@dataclass(frozen=True)
class Closed:
    """Why a case is not run: ``kind`` (REFUSED, INTERPRETER, CONTRACT) and the words said for it."""

    kind: str  # REFUSED, INTERPRETER, CONTRACT (declared, or a CUDA launch passing no stride), DEVICE
    reason: str  # the bare reason ("not checked: declared nan_inputs=unsupported", supports()'s words, ...)
    text: str  # said of the case: "case NAME (MxN) refused by design: ...", "case NAME not run: ...", ...


def before_inputs(spec, dt, name: str, M: int, N: int, layout=None, device: Optional[str] = None) -> Optional[Closed]:
    """The gate before the inputs are drawn: the kernel's supports() (a UserCodeError propagates), then the
    case's layout (``layout``, a verifier.inputs.layouts.Layout; ``device``: where it would run)."""
    reason = spec.check_supported(M, N, dt)
    if reason is not None:
        return Closed(REFUSED, reason, f"case {name} ({M}x{N}) refused by design: {reason}")
    layout = layout or _lay.DEFAULT
    if layout.kind in (_lay.STRIDED, _lay.UNALIGNED):
        why = _contracts.layout_excluded(spec, layout.kind, _itemsizes(spec, dt))
        if why is None and layout.kind == _lay.STRIDED and spec.kind == "cuda":
            from verifier.launch.cuda import strided_tensors

            why = None if strided_tensors(spec, M, N, dt, spec.op_params()) else NO_STRIDE
        if why is not None:
            return Closed(CONTRACT, why, f"case {name} {why}")
    if layout.large:
        why = large_device_reason(spec, dt, M, N, device)
        if why is not None:
            return Closed(DEVICE, why, f"case {name} ({M}x{N}) not run: {why}")
    return None


def _itemsizes(spec, dt) -> list:
    """Element sizes of the kernel's tensors in ``dt`` (labels in their own dtype)."""
    from verifier.ops import get_op

    op = get_op(spec.op)
    names = [op.input_dtype(t, dt, spec.op_params()) for t in op.inputs] + [dt.output]
    return [_dt.numpy_dtype(n).itemsize for n in names]


def large_device_reason(spec, dt, M: int, N: int, device: Optional[str]) -> Optional[str]:
    """Why the large-index case cannot run here: no GPU, or not enough free memory on it (None: it can)."""
    from verifier.launch.large import required_bytes

    need = required_bytes(spec.op, dt, M, N, spec.op_params())
    gb = f"{need / 1e9:.1f} GB"
    if device != "cuda":
        return f"needs a GPU with >= {gb} free; this run is on {device or 'the CPU'}"
    from verifier.gpu.probe import free_memory

    free = free_memory()
    if free is None or free < need:
        have = "no GPU memory information" if free is None else f"{free / 1e9:.1f} GB free"
        return f"needs a GPU with >= {gb} free; device 0 has {have}"
    return None


def after_inputs(spec, dt, name: str, xs: dict, device: str) -> Optional[Closed]:
    """The gate on the drawn inputs: interpreter caveats, then declared contracts."""
    caveat = interpreter_caveat(spec, dt, xs, device)
    if caveat:
        return Closed(INTERPRETER, caveat, f"case {name} not run: {caveat}")
    contract = _contracts.excluded(spec, xs)
    if contract:
        return Closed(CONTRACT, contract, f"case {name} {contract}")
    return None


def interpreter_caveat(spec, dt, xs, device) -> Optional[str]:
    """Inputs the Triton interpreter cannot represent faithfully (so a mismatch would be the
    interpreter's, not the kernel's). tests/test_interpreter_caveats.py pins each fact, so a Triton
    release that fixes it fails that test and the caveat can go."""
    if spec.kind != "triton" or device != "cpu" or dt.input != "bfloat16":
        return None
    import ml_dtypes

    tiny = float(ml_dtypes.finfo(ml_dtypes.bfloat16).smallest_normal)
    for name, v in xs.items():
        a = np.abs(v.astype(np.float64))
        if np.any((a > 0) & (a < tiny)):
            return (f"input {name!r} holds bf16 subnormals, which the Triton interpreter decodes wrongly "
                    "(6.5e-39 loads as 1.3e-39); run compiled on a GPU to check them")
    return None
