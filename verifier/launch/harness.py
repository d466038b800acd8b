"""Run one kernel on one input with poisoned, guarded outputs.

Every output buffer sits in the middle of a larger allocation: ``GUARD_BYTES`` of guard on each side,
all filled with a poison pattern before the launch. After the launch:
- an output element still holding the poison is *unwritten* (confirmed by a second run with a different
  poison, so a kernel that legitimately writes the poison's bits is not accused);
- any changed guard byte is an *out-of-range write*.
Every input sits between guards too, filled with its dtype's largest finite value (the strided case's gap value):
a read past either end changes the result the same way in every run, and a write there is a clobbered input. The
sanitizer's child launches without them (``input_guard=False``): memcheck then sees such a read itself.
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

A case's layout (verifier.inputs.layouts) changes where the tensors lie, not the judgement: in the strided case
2-D tensors have their rows apart by a stride of their own, x's ``N + ROW_PAD``, the next tensor's
``N + 2·ROW_PAD``, ... (verifier.inputs.layouts.row_pad; CUDA: the tensors whose stride a launch passes), the gaps
of inputs (and of an in-out tensor) holding the dtype's max and those of outputs the poison; a gap element
changed after the launch is an out-of-range write. In the unaligned case every tensor starts one element past a
16-byte boundary (the element before it is guard). An output the spec declares at a layout of its own
(``output_layout``, verifier.declare.out_layouts: ids rows n_expert apart, column-major scales) keeps it in every
layout: its buffer spans whole rows (columns) of the declared stride, the rest padding, poisoned and checked as a gap
is. The large case (more than 2^31 elements) has its own body,
verifier.launch.large, that never brings a whole array to the host.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import contextlib

import numpy as np

from verifier import dtypes as _dt
from verifier.declare import out_layouts as _olay
from verifier.errors import VerifierError
from verifier.inputs import layouts as _lay
from verifier.launch import strides as _strides
from verifier.launch import watchdog
from verifier.launch.outcome import (GUARD_BYTES, INT_VIEW, POISON, KernelFault, Outcome,  # noqa: F401 (re-exported)
                                     is_cuda_fault, out_dtype, signed, unwritten_summary)
from verifier.ops import get_op

# The older private names, read by tests and tools.
_POISON, _INT_VIEW, _signed, _out_dtype = POISON, INT_VIEW, signed, out_dtype


@dataclass
class Guarded:
    """One tensor's host buffer, as an int view of its dtype: ``g`` guard elements, ``lead`` more (the unaligned
    case), the tensor's ``span`` (rows ``stride`` elements apart when strided, the gaps holding ``gap``; or at the
    element ``strides`` an output's declared layout gives, verifier.declare.out_layouts, the rest padding), ``g``
    guard elements. Everything outside the tensor's elements holds ``poison`` (gaps: ``gap``); the elements hold
    the poison too, or an in-out tensor's (an input's) values."""

    host: np.ndarray
    g: int
    poison: int  # the poison as the int view's (signed) value
    dtype: str
    shape: tuple
    stride: Optional[int] = None  # row stride in elements of a strided 2-D tensor (None: contiguous)
    lead: int = 0
    gap: Optional[int] = None  # what the gaps between rows hold (None: the poison)
    declared: Optional[tuple] = None  # element strides of an output's declared layout (None: none declared)

    @property
    def n(self) -> int:
        return int(np.prod(self.shape))

    @property
    def start(self) -> int:
        """Index in ``host`` of the tensor's first element."""
        return self.g + self.lead

    @property
    def strides(self) -> Optional[tuple]:
        """Element strides where the tensor is not contiguous (strided rows, a declared layout), else None."""
        return self.declared or ((self.stride, 1) if self.stride else None)

    @property
    def span(self) -> int:
        return _olay.span(self.shape, self.strides) if self.strides else self.n

    def elements(self, a: np.ndarray) -> np.ndarray:
        """The tensor's elements in a whole buffer's bits ``a``, in its shape (a writable view)."""
        if self.strides:
            return np.lib.stride_tricks.as_strided(a[self.start:self.start + self.span], self.shape,
                                                   tuple(s * a.itemsize for s in self.strides))
        return a[self.start:self.start + self.n].reshape(self.shape)

    def padding(self) -> np.ndarray:
        """Bool mask over the span: True where no element lies (gaps, a declared layout's padding)."""
        mask = np.ones(self.span, dtype=bool)
        if self.span:
            np.lib.stride_tricks.as_strided(mask, self.shape, self.strides)[...] = False
        return mask


def guarded(shape, dtype: str, poison_bits: int, middle=None, *, stride: Optional[int] = None, lead: int = 0,
            gap_bits: Optional[int] = None, guard: bool = True, declared: Optional[tuple] = None) -> Guarded:
    """The poisoned host buffer of one output, with the output (or the in-out tensor's ``middle`` values) in
    the middle; ``stride``, ``lead`` and ``gap_bits`` lay it out as a strided or unaligned case does, ``declared``
    at an output's declared strides (an input's buffer: ``guard=False``, ``poison_bits`` its fill). Both launch
    bodies copy it to the device in one host-to-device copy: compute-sanitizer initcheck tracks that copy, while a
    device-side fill by an uninstrumented (filtered-out) kernel would leave the whole buffer 'uninitialized' in its
    eyes."""
    npd = _dt.numpy_dtype(dtype)
    itemsize = npd.itemsize
    g = GUARD_BYTES // itemsize if guard else 0
    b = Guarded(np.empty(0, dtype=_INT_VIEW[itemsize]), g, _signed(poison_bits, itemsize), dtype, tuple(shape),
                None if declared else stride, lead, None if gap_bits is None else _signed(gap_bits, itemsize),
                tuple(declared) if declared else None)
    b.host = np.full(b.start + b.span + g, b.poison, dtype=_INT_VIEW[itemsize])
    if b.strides and b.gap is not None:
        b.host[b.start:b.start + b.span][b.padding()] = b.gap
    if middle is not None:
        values = np.ascontiguousarray(np.asarray(middle).astype(npd, copy=False)).reshape(b.shape)
        b.elements(b.host)[...] = values.view(b.host.dtype)
    return b


def value_bits(value, dtype: str) -> int:
    """The bits of ``value`` (representable in ``dtype``) in ``dtype`` (a gap's fill)."""
    npd = _dt.numpy_dtype(dtype)
    return int(np.array([value], dtype=npd).view(_INT_VIEW[npd.itemsize])[0])


def strided_tensors(spec, op, M: int, N: int, dt, params, layout) -> set:
    """The tensors a strided case lays out with gaps: every 2-D tensor of the op (CUDA: those whose row stride a
    launch passes, verifier.launch.cuda.strided_tensors); none in other layouts."""
    if layout.kind != _lay.STRIDED:
        return set()
    return _strides.strided_tensors(spec, op, M, N, dt, params)


def _layout_of(name, values_shape, dtype, strided, layout, op, owners=None) -> dict:
    """guarded()'s stride and lead for tensor ``name`` in ``layout``: a strided tensor's rows a stride of its own
    apart (layouts.row_pad), whatever the kernel's kind; ``owners``: a tensor declared at another's stride
    (verifier.launch.strides.stride_owners) has that one."""
    lead = _lay.misalign_elements(_dt.numpy_dtype(dtype).itemsize, 0) if layout.kind == _lay.UNALIGNED else 0
    stride = values_shape[1] + _lay.row_pad(op, (owners or {}).get(name, name)) if name in strided else None
    return {"stride": stride, "lead": lead}


def _bits(t):
    """A torch tensor's bits as a numpy int array of its width (bf16 and fp8 included)."""
    import torch

    itemsize = t.element_size()
    return t.detach().contiguous().view(getattr(torch, _INT_VIEW[itemsize])).cpu().numpy()


def execute(run, spec, inputs_np: dict, dt, params: dict, device: str, check_poison: bool = True,
            layout=None, input_guard: bool = True) -> Outcome:
    """Run ``run(spec, inputs, outputs, params, dt, device)`` on poisoned, guarded outputs, the tensors laid out
    as ``layout`` (verifier.inputs.layouts.Layout; default contiguous) says. Each input sits between guards of the
    dtype's largest finite value (``input_guard``): a read past its ends changes the result as a strided case's
    gaps do, the same in every run, where the memory beyond the allocation would hold whatever lies there (on the
    CPU, another array or the allocator's bookkeeping); a write there is a clobber. The sanitizer's child leaves
    them out: a read past the allocation is then memcheck's to report."""
    layout = layout or _lay.DEFAULT
    kernel, run = run, lambda *a: watchdog.call(kernel, *a)  # past the battery's deadline: KernelHang
    if layout.large:
        from verifier.launch import large_host
        from verifier.launch.large import execute_large

        if large_host.on_host(spec, device):  # Triton in the interpreter: aliased host memory, the rows' owners
            return large_host.execute(run, spec, inputs_np, dt, params, device, check_poison, layout, execute)
        return execute_large(run, spec, inputs_np, dt, params, device, check_poison, layout)
    op = get_op(spec.op)
    out = _run_once(run, spec, op, inputs_np, dt, params, device, 0, layout, input_guard)
    if not check_poison:
        return out
    if out.unwritten:
        # Confirm with the second poison: unwritten only if it kept both poisons.
        second = _run_once(run, spec, op, inputs_np, dt, params, device, 1, layout, input_guard)
        confirmed = {}
        for name, mask in out.unwritten.items():
            both = mask & second.unwritten.get(name, np.zeros_like(mask))
            if both.any():
                confirmed[name] = both
        out.unwritten = confirmed
    return out


def _held(name: str, op, spec) -> list:
    """The inputs an output's buffer also is: itself if in-out, the input it is written over (outputs_alias)."""
    return ([name] if name in op.inouts else []) + [a for a in [getattr(spec, "outputs_alias", {}).get(name)] if a]


def _run_once(run, spec, op, inputs_np, dt, params, device, which: int, layout=_lay.DEFAULT,
              input_guard: bool = True) -> Outcome:
    M, N = inputs_np["x"].shape
    strided = strided_tensors(spec, op, M, N, dt, params, layout)
    owners = _strides.stride_owners(spec, M, N, dt, params) if strided else {}
    bufs, ins = {}, {}
    for name in op.outputs:
        dtype = _out_dtype(name, op, dt, params)
        shape = op.shape_of(name, M, N, params)
        held = _held(name, op, spec)
        middle, gap = None, None
        if held:  # starts as an input's values; its gaps hold what an input's do (read into a row, they change it)
            middle, gap = inputs_np[held[0]], value_bits(_lay.gap_value(dtype), dtype)
        lays = strided | ({name} if any(h in strided for h in held) else set())  # written over a strided input
        declared = _olay.strides_of(spec, name, shape, M, N, params, dt)  # its own layout, whatever the case's rows
        bufs[name] = guarded(shape, dtype, _POISON[dtype][which], middle, gap_bits=gap, declared=declared,
                             **_layout_of(name, shape, dtype, lays, layout, op, owners))
    held_all = {h for name in bufs for h in _held(name, op, spec)}
    for name, v in inputs_np.items():
        if name not in bufs and name not in held_all:
            dtype = _dt.canonical(v.dtype)
            fill = value_bits(_lay.gap_value(dtype), dtype)
            ins[name] = guarded(v.shape, dtype, fill, v, guard=input_guard,
                                **_layout_of(name, v.shape, dtype, strided, layout, op, owners))
    body = _launch_torch if getattr(spec, "imports_torch", True) else _launch_device  # raw driver memory
    after, ins_after, reads = body(run, spec, op, ins, bufs, dt, params, device)
    aliases = getattr(spec, "outputs_alias", {})
    out = _judge(bufs, after, op, aliases)
    out.guard_reads = reads
    scratch = set(getattr(spec, "scratch_inputs", ()))
    for name, b in ins.items():
        found = clobbered(b, ins_after[name], name in scratch)
        if found:
            out.clobbered[name] = found
    for name, src in aliases.items():
        out.unchanged[name] = same_bits(out.outputs[name], inputs_np[src])
    return out


def _value(bits, b: Guarded) -> str:
    """One element's bits as its dtype's value and the bits (a NaN's payload shows)."""
    v = np.array([bits], dtype=b.host.dtype).view(_dt.numpy_dtype(b.dtype))[0]
    width = 2 * b.host.itemsize
    return f"{v!s} (bits 0x{int(bits) & ((1 << 4 * width) - 1):0{width}x})"


def clobbered(b: Guarded, after: np.ndarray, scratch: bool = False) -> Optional[str]:
    """What changed in input ``b``'s buffer during the call (``after``: its bits), compared bit for bit (a NaN
    by its payload), or None: its elements (unless the spec declares the input ``scratch``), and around them the
    gaps of a strided layout and the element before an unaligned one, which no kernel may write."""
    before = b.host
    if np.array_equal(before, after):
        return None
    elements = np.zeros(before.shape, dtype=bool)
    b.elements(elements)[...] = True
    changed = before != after
    inside = changed & elements
    if inside.any() and not scratch:
        idx = np.argwhere(b.elements(changed))
        first = tuple(int(i) for i in idx[0])
        return (f"{len(idx)} of {b.n} elements changed, first at index {first}: "
                f"{_value(b.elements(before)[first], b)} before the call, {_value(b.elements(after)[first], b)} after")
    outside = changed & ~elements
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        where = "before its first element (its guard, or the unaligned case's lead)" if i < b.start else \
            "after its last element (its guard)" if i >= b.start + b.span else "between its rows (the strided case's gaps)"
        return (f"{int(outside.sum())} elements written outside the tensor, {where}, first at buffer index "
                f"{i - b.start}: {_value(before[i], b)} before the call, {_value(after[i], b)} after")
    return None


def same_bits(a, b) -> np.ndarray:
    """Elementwise: ``b`` (converted to ``a``'s dtype) has the same bits as ``a``."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    view = _INT_VIEW[a.dtype.itemsize]
    return a.view(view) == b.astype(a.dtype, copy=False).view(view)


def _torch_view(buf, b: Guarded):
    """The tensor of Guarded ``b`` inside its whole-buffer tensor ``buf`` (a strided view where ``b`` is)."""
    import torch

    strides = b.strides or tuple(int(np.prod(b.shape[i + 1:])) for i in range(len(b.shape)))
    return torch.as_strided(buf, b.shape, strides, b.start)


def _to_device(b: Guarded, device: str):
    """Buffer ``b``'s host bits as a tensor of its dtype on ``device``, allocated by torch (aligned to 64 bytes or
    more, so that ``start`` lies where the layout says)."""
    import torch

    host = torch.from_numpy(b.host).view(_dt.torch_dtype(b.dtype))
    buf = torch.empty(host.shape, dtype=host.dtype, device=device)
    buf.copy_(host)
    _check_placed(buf.data_ptr(), b)
    return buf


def _check_placed(base: int, b: Guarded) -> None:
    itemsize = _dt.numpy_dtype(b.dtype).itemsize
    first = base + b.start * itemsize
    if b.lead and first % _lay.ALIGN != itemsize % _lay.ALIGN:
        raise VerifierError(f"internal: the unaligned case put a tensor at {first:#x}, not one {itemsize}-byte "
                            f"element past a {_lay.ALIGN}-byte boundary")


def _launch_torch(run, spec, op, ins, bufs, dt, params, device) -> dict:
    """Torch tensors (Triton kernels, callables): each input's and guarded output's buffer copied to ``device`` as a
    whole, ``run`` given views of their tensors (an in-out tensor's view is also its input). Returns name -> bits of
    the whole buffer, for the outputs and for the inputs (each input is compared with what it held: ``clobbered``)."""
    import torch

    in_whole = {k: _to_device(b, device) for k, b in ins.items()}  # read back after: inputs stay unchanged
    inputs = {k: _torch_view(in_whole[k], b) for k, b in ins.items()}
    outputs, whole = {}, {}
    for name, b in bufs.items():
        buf = _to_device(b, device)
        view = _torch_view(buf, b)
        for held in _held(name, op, spec):  # the kernel updates it in place / writes the output over it
            inputs[held] = view
        outputs[name] = view
        whole[name] = buf
    watched = _guard_bands(spec, device, {**in_whole, **whole}, {**ins, **bufs})
    try:
        with watched as reads:
            run(spec, inputs, outputs, params, dt, device)
        if device == "cuda":
            torch.cuda.synchronize()
    except VerifierError:
        raise  # refusals, spec errors, missing tools: the runner's verdicts, not the kernel's failure
    except Exception as e:
        raise KernelFault(e) from e
    after = {name: _bits(buf) for name, buf in whole.items()}
    return after, {k: _bits(buf) for k, buf in in_whole.items()}, dict(reads or {})


def _guard_bands(spec, device: str, tensors: dict, guarded: dict):
    """A context watching the Triton interpreter's loads for reads in the tensors' guard bands
    (verifier.launch.interpreter_reads), yielding the hits; nothing elsewhere (compiled code: memcheck's job)."""
    if not spec.interpreted(device):
        return contextlib.nullcontext({})
    from verifier.launch.interpreter_reads import bands_of, guard_reads

    bands = []
    for name, buf in tensors.items():
        b, isz = guarded[name], buf.element_size()
        bands += bands_of(name, buf.data_ptr(), buf.numel() * isz, b.start * isz, (b.start + b.span) * isz)
    return guard_reads(bands)


def _launch_device(run, spec, op, ins, bufs, dt, params, device) -> dict:
    """CUDA specs: each input's and guarded output's buffer uploaded whole to a driver buffer (one host-to-device
    copy each), ``run`` given DeviceArrays of their tensors (an in-out tensor's is also its input). No torch.
    Returns name -> bits of the whole buffer, downloaded, for the outputs and for the inputs."""
    from verifier.gpu import libcuda as cd
    from verifier.launch.cuda import DeviceArray, require_gpu

    require_gpu(spec, device)
    dev = []

    def device_array(b: Guarded):
        dev.append(cd.DeviceBuffer.from_array(b.host))
        _check_placed(dev[-1].ptr, b)
        row = b.strides[0] if b.strides and len(b.shape) == 2 else None  # a declared layout's too (column-major: 1)
        return DeviceArray(dev[-1], b.shape, b.start * b.host.itemsize, row)

    try:
        inputs = {k: device_array(b) for k, b in ins.items()}
        in_whole = {k: v.buffer for k, v in inputs.items()}  # downloaded after: inputs stay unchanged
        outputs, whole = {}, {}
        for name, b in bufs.items():
            view = device_array(b)
            whole[name] = view.buffer
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
        return ({name: whole[name].download(b.host.dtype, b.host.shape) for name, b in bufs.items()},
                {k: in_whole[k].download(b.host.dtype, b.host.shape) for k, b in ins.items()}, {})
    finally:
        for d in dev:
            d.close()


def spec_layout(b: Guarded) -> str:
    """How a finding names a declared layout: its strides in elements."""
    return f"(strides {', '.join(str(v) for v in b.declared)})"


def _judge(bufs: dict, after: dict, op, aliases=None) -> Outcome:
    """Guards, gaps and poison of each output's whole buffer after the launch: changed guard bytes are out-of-range
    writes, and so are changed gap elements (strided); elements still holding the poison are unwritten (in-out
    tensors and outputs written over an input: never, their buffer started with values, not the poison)."""
    result = Outcome(outputs={})
    for name, b in bufs.items():
        bits = after[name]
        itemsize = bits.itemsize
        p = np.array(b.poison, dtype=bits.dtype)
        lo, hi = bits[:b.start], bits[b.start + b.span:]
        # (side, distance in bytes from the output's first / one-past-last byte)
        hits = [("before", int(b.start - i) * itemsize) for i in np.nonzero(lo != p)[0][-8:]]
        hits += [("after", int(i) * itemsize) for i in np.nonzero(hi != p)[0][:8]]
        if hits:
            result.guard_hits[name] = hits
        if b.strides:
            pad = b.padding()
            changed = np.flatnonzero(pad & (bits[b.start:b.start + b.span] != np.array(
                b.poison if b.gap is None else b.gap, dtype=bits.dtype)))
            if len(changed):
                what = (f"in the padding of its declared layout {spec_layout(b)}" if b.declared
                        else "in the gaps between rows")
                result.gap_hits[name] = (len(changed), f"{what}, first at "
                                         f"{_olay.where_in(b.shape, b.strides, int(changed[0]))}")
        body = b.elements(bits)
        if name not in op.inouts and name not in (aliases or {}):
            mask = body == p
            if mask.any():
                result.unwritten[name] = mask
        result.outputs[name] = np.ascontiguousarray(body).view(_dt.numpy_dtype(b.dtype)).reshape(b.shape)
    return result
