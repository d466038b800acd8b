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

The buffers (``guarded``, assembled in numpy) and the judgement (``_judge``, on the bits of each whole buffer
read back) are the same for every kind of kernel; how they reach the device is not. A CUDA spec's buffers go to
the device as driver buffers (verifier.gpu.libcuda) and its runner gets ``DeviceArray``s ``g`` elements past
each buffer's start (verifier.launch.cuda): no torch in the process, whichever process runs it. Triton kernels
and callables get torch tensors, views of whole buffers copied to the device the same way.
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
    unchanged: dict = field(default_factory=dict)  # output written over an input -> mask of elements that kept
    # the input's bits (unwritten, unless the result rounds to the input: verifier.battery.values decides)


def _signed(bits: int, nbytes: int) -> int:
    lim = 1 << (8 * nbytes)
    return bits - lim if bits >= lim // 2 else bits


@dataclass
class Guarded:
    """One output's host buffer, as an int view of its dtype: ``g`` guard elements, the output (the poison, or
    an in-out tensor's values), ``g`` guard elements; everything but an in-out middle holds ``poison``."""

    host: np.ndarray
    g: int
    poison: int  # the poison as the int view's (signed) value
    dtype: str
    shape: tuple

    @property
    def n(self) -> int:
        return self.host.size - 2 * self.g


def guarded(shape, dtype: str, poison_bits: int, middle=None) -> Guarded:
    """The poisoned host buffer of one output, with the output (or the in-out tensor's ``middle`` values) in
    the middle. Both launch bodies copy it to the device in one host-to-device copy: compute-sanitizer initcheck
    tracks that copy, while a device-side fill by an uninstrumented (filtered-out) kernel would leave the whole
    buffer 'uninitialized' in its eyes."""
    npd = _dt.numpy_dtype(dtype)
    itemsize = npd.itemsize
    g = GUARD_BYTES // itemsize
    n = int(np.prod(shape))
    host = np.full(g + n + g, _signed(poison_bits, itemsize), dtype=_INT_VIEW[itemsize])
    if middle is not None:
        values = np.ascontiguousarray(np.asarray(middle).astype(npd, copy=False)).reshape(-1)
        host[g:g + n] = values.view(host.dtype)
    return Guarded(host, g, _signed(poison_bits, itemsize), dtype, tuple(shape))


def _bits(t):
    """A torch tensor's bits as a numpy int array of its width (bf16 and fp8 included)."""
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


def _held(name: str, op, spec) -> list:
    """The inputs an output's buffer also is: itself if in-out, the input it is written over (outputs_alias)."""
    return ([name] if name in op.inouts else []) + [a for a in [getattr(spec, "outputs_alias", {}).get(name)] if a]


def _run_once(run, spec, op, inputs_np, dt, params, device, which: int) -> Outcome:
    M, N = inputs_np["x"].shape
    bufs = {}
    for name in op.outputs:
        dtype = _out_dtype(name, op, dt)
        held = _held(name, op, spec)
        middle = inputs_np[held[0]] if held else None
        bufs[name] = guarded(op.shape_of(name, M, N), dtype, _POISON[dtype][which], middle)
    body = _launch_device if getattr(spec, "kind", None) == "cuda" else _launch_torch
    after = body(run, spec, op, inputs_np, bufs, dt, params, device)
    out = _judge(bufs, after, op, getattr(spec, "outputs_alias", {}))
    for name, src in getattr(spec, "outputs_alias", {}).items():
        out.unchanged[name] = same_bits(out.outputs[name], inputs_np[src])
    return out


def same_bits(a, b) -> np.ndarray:
    """Elementwise: ``b`` (converted to ``a``'s dtype) has the same bits as ``a``."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    view = _INT_VIEW[a.dtype.itemsize]
    return a.view(view) == b.astype(a.dtype, copy=False).view(view)


def _launch_torch(run, spec, op, inputs_np, bufs, dt, params, device) -> dict:
    """Torch tensors (Triton kernels, callables): inputs copied to ``device``, each guarded buffer copied as a whole,
    ``run`` given views of their middles (an in-out tensor's view is also its input). Returns name -> bits of the
    whole buffer."""
    import torch

    inputs = {k: _dt.from_numpy(v, device) for k, v in inputs_np.items()}
    outputs, whole = {}, {}
    for name, b in bufs.items():
        host = torch.from_numpy(b.host.copy()).view(_dt.torch_dtype(b.dtype))
        buf = host.to(device) if device != "cpu" else host
        view = buf[b.g:b.g + b.n].view(b.shape)
        for held in _held(name, op, spec):  # the kernel updates it in place / writes the output over it
            inputs[held] = view
        outputs[name] = view
        whole[name] = buf
    try:
        run(spec, inputs, outputs, params, dt, device)
        if device == "cuda":
            torch.cuda.synchronize()
    except VerifierError:
        raise  # refusals, spec errors, missing tools: the runner's verdicts, not the kernel's failure
    except Exception as e:
        raise KernelFault(e) from e
    return {name: _bits(buf) for name, buf in whole.items()}


def _launch_device(run, spec, op, inputs_np, bufs, dt, params, device) -> dict:
    """CUDA specs: inputs and each guarded buffer uploaded whole to driver buffers (one host-to-device copy each),
    ``run`` given DeviceArrays ``g`` elements into them (an in-out tensor's is also its input). No torch. Returns
    name -> bits of the whole buffer, downloaded."""
    from verifier.gpu import libcuda as cd
    from verifier.launch.cuda import DeviceArray, require_gpu

    require_gpu(spec, device)
    dev = []
    try:
        inputs, outputs = {}, {}
        held = {h for name in bufs for h in _held(name, op, spec)}
        for k, v in inputs_np.items():
            if k not in held:
                a = np.ascontiguousarray(v)
                dev.append(cd.DeviceBuffer.from_array(a))
                inputs[k] = DeviceArray(dev[-1], a.shape)
        whole = {}
        for name, b in bufs.items():
            whole[name] = cd.DeviceBuffer.from_array(b.host)
            dev.append(whole[name])
            view = DeviceArray(whole[name], b.shape, b.g * b.host.itemsize)
            for h in _held(name, op, spec):  # the kernel updates it in place / writes the output over it
                inputs[h] = view
            outputs[name] = view
        try:
            run(spec, inputs, outputs, params, dt, device)
        except cd.DriverError as e:  # a driver call of the kernel's launches failed (a module it cannot load, say)
            raise KernelFault(e) from e
        except VerifierError:
            raise  # refusals, spec errors, missing tools: the runner's verdicts, not the kernel's failure
        except Exception as e:
            raise KernelFault(e) from e
        return {name: whole[name].download(b.host.dtype, b.host.shape) for name, b in bufs.items()}
    finally:
        for d in dev:
            d.close()


def _judge(bufs: dict, after: dict, op, aliases=None) -> Outcome:
    """Guards and poison of each output's whole buffer after the launch: changed guard bytes are out-of-range
    writes, middle elements still holding the poison are unwritten (in-out tensors and outputs written over an
    input: never, their buffer started with values, not the poison)."""
    result = Outcome(outputs={})
    for name, b in bufs.items():
        bits = after[name]
        g, n, itemsize = b.g, b.n, bits.itemsize
        p = np.array(b.poison, dtype=bits.dtype)
        lo, body, hi = bits[:g], bits[g:g + n], bits[g + n:]
        # (side, distance in bytes from the output's first / one-past-last byte)
        hits = [("before", int(g - i) * itemsize) for i in np.nonzero(lo != p)[0][-8:]]
        hits += [("after", int(i) * itemsize) for i in np.nonzero(hi != p)[0][:8]]
        if hits:
            result.guard_hits[name] = hits
        if name not in op.inouts and name not in (aliases or {}):
            mask = (body == p).reshape(b.shape)
            if mask.any():
                result.unwritten[name] = mask
        result.outputs[name] = body.copy().view(_dt.numpy_dtype(b.dtype)).reshape(b.shape)
    return result
