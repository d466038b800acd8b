"""Run one kernel on one input with poisoned, guarded outputs.

Every output buffer sits in the middle of a larger allocation: ``GUARD_BYTES`` of guard on each side,
all filled with a poison pattern before the launch. After the launch:
- an output element still holding the poison is *unwritten* (confirmed by a second run with a different
  poison, so a kernel that legitimately writes the poison's bits is not accused);
- any changed guard byte is an *out-of-range write*.
Float poisons are NaNs with distinctive payloads, never a value a correct kernel computes; that includes
fp8: e4m3fn has only the NaNs 0x7F and 0xFF (both are used), e5m2 has six (0x7D-0x7F, 0xFD-0xFF).

The confirmation rule: an element is unwritten only if it holds both poisons, the first run's bits after the
first run and the second run's after the second. A kernel that writes a value (even a NaN: the canonical
NaN 0x7F of e4m3fn, say) writes the same bits in both runs, so it matches at most one poison and is never
accused. This is what makes the check sound for formats without NaN (int8, int32), where either poison is a
value a kernel can legitimately write.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import VerifierError
from verifier.ops import get_op

GUARD_BYTES = 4096

# Two poison bit patterns per dtype (stored as the same-width signed int).
_POISON = {
    "float64": (0x7FF4DEADBEEF0001, 0x7FF5A5A5A5A5A5A5),
    "float32": (0x7FA1B2C3, 0x7FD4E5F6),
    "float16": (0x7E5A, 0x7D3C),
    "bfloat16": (0x7FA5, 0x7FB3),
    "float8_e4m3fn": (0x7F, 0xFF),  # its only two NaNs (no infinities)
    "float8_e5m2": (0x7E, 0xFD),
    "int8": (0x5A, 0x3C),
    "int32": (0x5A5A5A5A, 0x3C3C3C3C),
}
_INT_VIEW = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


class KernelFault(Exception):
    """The kernel itself raised (a Python exception from a callable or launcher, or a CUDA error after a
    launch). Distinguishes the kernel's failure, a finding, from a bug in the verifier, an internal error.
    ``cuda`` is True when the CUDA context is unusable afterwards, so nothing more can run in this process."""

    def __init__(self, original: BaseException):
        self.original = original
        self.cuda = is_cuda_fault(original)
        super().__init__(f"{type(original).__name__}: {original}")


def is_cuda_fault(e: BaseException) -> bool:
    text = f"{type(e).__module__}.{type(e).__name__}: {e}"
    return any(k in text for k in ("CUDARuntimeError", "CUDADriverError", "CUDA error", "cudaError", "CUDA_ERROR"))


@dataclass
class Outcome:
    outputs: dict  # name -> numpy array in the output dtype (bit-exact)
    unwritten: dict = field(default_factory=dict)  # name -> bool mask (only where some are unwritten)
    guard_hits: dict = field(default_factory=dict)  # name -> list of (side, byte offset) of changed guard bytes


def _signed(bits: int, nbytes: int) -> int:
    lim = 1 << (8 * nbytes)
    return bits - lim if bits >= lim // 2 else bits


def _guarded(shape, dtype: str, device: str, poison_bits: int, middle=None):
    """A poisoned buffer with the output (or the in-out tensor's ``middle`` values) in the middle.

    It is assembled on the host and copied to the device in one host-to-device copy: compute-sanitizer
    initcheck tracks that copy, while a device-side fill by an uninstrumented (filtered-out) kernel would
    leave the whole buffer 'uninitialized' in its eyes."""
    import torch

    td = _dt.torch_dtype(dtype)
    itemsize = torch.empty((), dtype=td).element_size()
    g = GUARD_BYTES // itemsize
    n = int(np.prod(shape))
    host = torch.empty(g + n + g, dtype=td)
    host.view(getattr(torch, _INT_VIEW[itemsize])).fill_(_signed(poison_bits, itemsize))
    if middle is not None:
        host[g:g + n].copy_(middle.reshape(-1).cpu())
    buf = host.to(device) if device != "cpu" else host
    return buf, buf[g:g + n].view(shape), g


def _bits(t):
    import torch

    itemsize = t.element_size()
    return t.detach().contiguous().view(getattr(torch, _INT_VIEW[itemsize])).cpu().numpy()


def execute(run, spec, inputs_np: dict, dt, params: dict, device: str, check_poison: bool = True) -> Outcome:
    """Run ``run(spec, inputs, outputs, params, dt, device)`` on poisoned, guarded outputs."""
    op = get_op(spec.op)
    M, N = inputs_np["x"].shape
    out = _run_once(run, spec, op, inputs_np, dt, params, device, 0)
    if not check_poison:
        return out
    if out.unwritten:
        # Confirm with the second poison: unwritten only if it kept both poisons.
        second = _run_once(run, spec, op, inputs_np, dt, params, device, 1)
        confirmed = {}
        for name, mask in out.unwritten.items():
            both = mask & second.unwritten.get(name, np.zeros_like(mask))
            if both.any():
                confirmed[name] = both
        out.unwritten = confirmed
    return out


def _out_dtype(name: str, op, dt) -> str:
    # In-out tensors (residual) keep the input dtype; everything else is the output dtype.
    return dt.input if name in op.inouts else dt.output


def _run_once(run, spec, op, inputs_np, dt, params, device, which: int) -> Outcome:
    M, N = inputs_np["x"].shape
    inputs = {k: _dt.from_numpy(v, device) for k, v in inputs_np.items()}
    outputs, bufs = {}, {}
    for name in op.outputs:
        dtype = _out_dtype(name, op, dt)
        poison = _POISON[dtype][which]
        middle = inputs[name] if name in op.inouts else None
        buf, view, g = _guarded(op.shape_of(name, M, N), dtype, device, poison, middle)
        if name in op.inouts:
            inputs[name] = view  # the kernel updates it in place
        outputs[name] = view
        bufs[name] = (buf, g, poison)
    try:
        run(spec, inputs, outputs, params, dt, device)
        if device == "cuda":
            import torch

            torch.cuda.synchronize()
    except VerifierError:
        raise  # refusals, spec errors, missing tools: the runner's verdicts, not the kernel's failure
    except Exception as e:
        raise KernelFault(e) from e
    result = Outcome(outputs={})
    for name, (buf, g, poison) in bufs.items():
        bits = _bits(buf)
        n = bits.size - 2 * g
        itemsize = buf.element_size()
        p = np.array(_signed(poison, itemsize), dtype=bits.dtype)
        lo, body, hi = bits[:g], bits[g:g + n], bits[g + n:]
        # (side, distance in bytes from the output's first / one-past-last byte)
        hits = [("before", int(g - i) * itemsize) for i in np.nonzero(lo != p)[0][-8:]]
        hits += [("after", int(i) * itemsize) for i in np.nonzero(hi != p)[0][:8]]
        if hits:
            result.guard_hits[name] = hits
        shape = op.shape_of(name, M, N)
        if name not in op.inouts:
            mask = (body == p).reshape(shape)
            if mask.any():
                result.unwritten[name] = mask
        result.outputs[name] = _dt.to_numpy(outputs[name]).copy()
    return result
