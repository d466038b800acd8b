"""Runner for CudaKernel: nvcc → cubin (cached) → launches through the CUDA driver API (verifier.gpu.libcuda) on
raw 64-bit device addresses. The one CUDA launch path, whoever holds the memory:

- the harness (every process kind: check child, pytest plugin, sanitizer child) hands it ``DeviceArray``s, views
  into driver buffers, and launches on the default stream: no torch in the process;
- benchmarks and users hand it torch CUDA tensors (``data_ptr()``), launched on torch's current stream so they are
  ordered with torch's work on those tensors.

Pointers go to the kernel as 64-bit integers, so bf16/fp8 need no dtype support from anyone; a Struct goes as
its bytes in C layout (verifier.declare.args), resolved here (``bind_args``). ``prepare`` checks
the refusal before anything runs, loads the cubin, binds every launch and allocates the workspaces (uninitialized,
one buffer per name, per call); ``launch`` launches them, with ``sync`` a stream synchronize after each so a fault
is raised naming the launch that caused it (benchmarks pass sync=False).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from verifier import dtypes as _np_dtypes
from verifier.declare.args import (PTR, SCALAR_KINDS, LaunchLayout, Pointer, Stride, Struct, Workspace, alignment_of,
                                   as_arg, check_value, stride_of, workspace_of)
from verifier.declare.kernels import Launch
from verifier.declare.layout import takes_layout
from verifier.errors import SpecError, ToolMissing, Unsupported, UsageError
from verifier.gpu import libcuda as cd
from verifier.gpu import probe
from verifier.inputs.layouts import CONTIGUOUS, STRIDED, UNALIGNED, row_pad
from verifier.launch.symbols import cubin_entries, resolve

_SMEM_DEFAULT = 48 * 1024  # dynamic shared memory above this needs the function's attribute raised


def build(spec, arch: str, dt=None):
    """The cached cubin of ``spec`` for ``arch``, with the -D macros ``spec.defines(dt)`` selects."""
    from verifier.declare.usercode import call
    from verifier.toolchain.nvcc import compile_cubin

    defines = call(spec, "defines", spec.defines, dt) if dt is not None else {}
    return compile_cubin(spec.source_path(), arch=arch, defines=defines, flags=tuple(spec.extra_flags),
                         include_dirs=spec.include_paths())


def scalar_arg(kind: str, value):
    """``value`` as the numpy scalar of C type ``kind`` (verifier.declare.args.SCALAR_KINDS), range-checked."""
    if kind not in SCALAR_KINDS:
        raise SpecError(f"Scalar kind {kind!r} is not a C scalar type", fix=f"use one of {', '.join(SCALAR_KINDS)}")
    return np.dtype(SCALAR_KINDS[kind]).type(check_value(kind, value, f"{kind} argument"))


def launches_for(spec, M: int, N: int, dt, params, layout: Optional[LaunchLayout] = None) -> list[Launch]:
    """The spec's launches for one call. A ``launches(M, N, dt, params, layout)`` gets ``layout`` (a LaunchLayout:
    each tensor's alignment and row stride); None: the contiguous layout of fresh tensors (model_layout)."""
    from verifier.declare.usercode import call

    if takes_layout(spec.launches):
        layout = layout if layout is not None else model_layout(spec, M, N, dt, params)
        launches = call(spec, "launches", spec.launches, M, N, dt, params, layout)
    else:
        launches = call(spec, "launches", spec.launches, M, N, dt, params)
    # [] is a host that launches nothing at this shape (a dispatcher without a case for it, as DeepSpeed's norms
    # for some row lengths): the outputs stay as they were and are judged so (unwritten). None is a forgotten return.
    if not isinstance(launches, (list, tuple)) or not all(isinstance(l, Launch) for l in launches):
        raise SpecError(
            f"kernel {spec.name}: launches(M, N, dtypes, params) must return a list of Launch, not "
            f"{type(launches).__name__}",
            fix="return [Launch(entry=..., grid=..., block=..., args=...)] ([] where the host launches nothing)",
        )
    return list(launches)


def strided_tensors(spec, M: int, N: int, dt, params) -> set:
    """The tensors whose row stride some launch of the spec passes ('x.stride', Stride('x', 'int64'), a Struct
    member, a Stride's shared_with) or reads (``layout.stride('x')`` in a five-parameter launches): the ones the
    strided cases lay out with gaps between rows (the others stay contiguous)."""
    return set(stride_map(spec, M, N, dt, params))


def stride_map(spec, M: int, N: int, dt, params) -> dict:
    """strided tensor -> the tensor whose row stride it is laid out at: itself, or for a tensor indexed with
    another's stride (Stride(owner, shared_with=(tensor,))) that owner."""
    from verifier.ops import get_op

    layout = model_layout(spec, M, N, dt, params) if takes_layout(spec.launches) else None
    names = get_op(spec.op).other_names  # a stride passed by another name of the tensor is its stride
    passed = [v for launch in launches_for(spec, M, N, dt, params, layout) for a in launch.args
              for v in _stride_leaves(a) if v is not None]  # evaluating them fills layout.asked
    own = [v.tensor for v in passed] + sorted(layout.asked if layout is not None else ())
    out = {names.get(t, t): names.get(t, t) for t in own}
    out.update({names.get(m, m): names.get(v.tensor, v.tensor) for v in passed for m in v.shared_with
                if names.get(m, m) not in out})
    return out


def _stride_leaves(a) -> list:
    try:
        arg = as_arg(a)
    except SpecError:
        return []  # reported where the launch is bound
    return [stride_of(v) for _, kind, v in arg.leaves() if kind != PTR]


# ------------------------------------------------------------------------------------------------ tensors' places

_MODEL_BASE = 1 << 32  # where model_tensors places the first tensor: a 256-byte aligned fake device address
_MODEL_STEP = 1 << 40  # between two model tensors (none overlaps another, whatever its size)


def tensor_dtypes(spec, dt, params) -> dict:
    """name -> dtype of every tensor of the spec's op (labels in their own dtype, in-out tensors the input's)."""
    from verifier.launch.outcome import out_dtype
    from verifier.ops import get_op

    op = get_op(spec.op)
    out = {t: op.input_dtype(t, dt, params) for t in op.inputs}
    out.update({t: out_dtype(t, op, dt, params) for t in op.outputs if t not in out})
    return out


@dataclass(frozen=True)
class ModelTensor:
    """A tensor as a case would place it, without memory: its address, element count and size, row stride."""

    address: int
    numel: int
    itemsize: int
    stride: Optional[int]


def model_tensors(spec, M: int, N: int, dt, params, kind: str = CONTIGUOUS) -> dict:
    """name -> ModelTensor of the op's tensors as a case of layout ``kind`` (verifier.inputs.layouts) places them:
    256-byte aligned and contiguous; the strided case's rows a stride of their own apart (the tensors a launch
    passes the stride of; x's N + ROW_PAD, the next tensor's N + 2·ROW_PAD, ...: verifier.inputs.layouts.row_pad),
    as the harness lays them out; the unaligned case's one element past a 16-byte boundary. Where no tensor exists
    yet (the build step, lint, the gate) launches are evaluated on these."""
    from verifier import dtypes as _dtypes
    from verifier.declare import out_layouts as _olay
    from verifier.declare.aliases import buffer_of
    from verifier.ops import get_op

    op = get_op(spec.op)
    owners = stride_map(spec, M, N, dt, params) if kind == STRIDED else {}
    strided = {buffer_of(spec, t) for t in owners}  # an input written over by an output: that output's buffer
    out = {}
    for i, (t, dtype) in enumerate(tensor_dtypes(spec, dt, params).items()):
        itemsize = _dtypes.numpy_dtype(dtype).itemsize
        shape = op.shape_of(t, M, N, params)
        address = _MODEL_BASE + i * _MODEL_STEP + (itemsize if kind == UNALIGNED else 0)
        stride = None
        declared = _olay.strides_of(spec, t, shape, M, N, params, dt) if t in op.outputs else None
        if declared and len(shape) == 2:  # an output at its declared layout (verifier.declare.out_layouts)
            stride = declared[0]
        elif len(shape) == 2:
            buf = buffer_of(spec, t)
            stride = shape[1] + row_pad(op, owners.get(buf, buf)) if buf in strided else shape[1]
        out[t] = ModelTensor(address, int(np.prod(shape)), itemsize, stride)
    return out


def model_layout(spec, M: int, N: int, dt, params, kind: str = CONTIGUOUS) -> LaunchLayout:
    """The LaunchLayout of model_tensors: what ``launches(..., layout)`` gets where no tensor exists yet."""
    from verifier.ops import get_op
    from verifier.ops.other_names import with_other_names

    ts = with_other_names(get_op(spec.op), model_tensors(spec, M, N, dt, params, kind))
    return LaunchLayout({t: alignment_of(m.address) for t, m in ts.items()},
                        {t: m.stride for t, m in ts.items() if m.stride is not None}, f"op {spec.op}")


# ------------------------------------------------------------------------------------------------ binding

class _Binder:
    """Resolves the values of one launch's arguments for one call and packs them as the kernel takes them."""

    def __init__(self, spec, launch, M, N, params, pointers, workspace_pointer, strides, extents):
        self.spec, self.launch, self.M, self.N, self.params = spec, launch, M, N, params
        from verifier.ops import get_op
        from verifier.ops.other_names import with_other_names

        op = get_op(spec.op)  # its other names name the same tensors (merge_attn_states' 'v_a' for 'x')
        self.pointers, self.workspace_pointer = with_other_names(op, pointers), workspace_pointer
        self.strides, self.extents = with_other_names(op, strides or {}), with_other_names(op, extents or {})

    def _error(self, what: str, fix: str) -> SpecError:
        return SpecError(f"kernel {self.spec.name}: launch {self.launch.entry} {what}", fix=fix)

    def arg(self, a):
        try:
            arg = as_arg(a)
        except SpecError as e:
            raise self._error(f"has argument {a!r}: {e.message}", e.fix) from None
        leaves = arg.leaves()
        if not isinstance(arg, Struct):
            (_, kind, v), = leaves
            return self.scalar(kind, v)
        buf = bytearray(arg.nbytes)
        for off, kind, v in leaves:
            raw = self.scalar(kind, v).tobytes()
            buf[off:off + len(raw)] = raw
        return bytes(buf)

    def scalar(self, kind: str, v):
        if kind == PTR:
            return np.uint64(self.pointer(v))
        value = self.value(v)
        try:
            return np.dtype(SCALAR_KINDS[kind]).type(check_value(kind, value, f"argument {_shown(v)}"))
        except SpecError as e:
            raise self._error(f"passes {e.message}", e.fix) from None

    def value(self, v):
        stride = stride_of(v)
        if stride is not None:
            for t in (stride.tensor,) + stride.shared_with:
                if t not in self.strides:
                    raise self._error(f"passes the row stride of {t!r}, which is not a 2-D tensor of the op",
                                      fix=f"name one of {sorted(self.strides)} ('x.stride' or Stride('x', 'int64'))")
            return self.strides[stride.tensor]
        if v == "M":
            return self.M
        if v == "N":
            return self.N
        if v == "eps":
            if "eps" not in (self.params or {}):
                raise self._error("passes 'eps', which op params do not have", fix="pass a Scalar instead")
            return self.params["eps"]
        return v

    def pointer(self, v) -> int:
        if v is None:
            return 0
        ws = v if isinstance(v, Workspace) else workspace_of(v) if isinstance(v, str) else None
        if ws is not None:
            return int(self.workspace_pointer(ws))
        p = v if isinstance(v, Pointer) else Pointer(v) if isinstance(v, str) else None
        if p is None:
            raise self._error(f"has pointer {v!r}", fix="name an op tensor, Pointer(...) or a Workspace")
        if p.tensor is None:
            return 0
        if p.tensor not in self.pointers:
            raise self._error(f"has argument {p.tensor!r}",
                              fix=f"use tensor names {sorted(self.pointers)}, 'M', 'N', 'eps', '<tensor>.stride', "
                                  "Workspace(...), Pointer(...), Struct([...]) or Scalar")
        base = int(self.pointers[p.tensor])
        if not p.offset:
            return base
        numel, itemsize = self.extents.get(p.tensor, (None, None))
        if numel is None:
            raise self._error(f"passes {p.describe()}, but the size of {p.tensor!r} is not known here",
                              fix="pass the tensor itself")
        if not 0 <= p.offset < numel:
            raise self._error(f"passes {p.describe()}: offset {p.offset} is outside {p.tensor!r}, which holds "
                              f"{numel} elements at M={self.M}, N={self.N}",
                              fix=f"keep the offset within 0 .. {numel - 1}")
        return base + p.offset * itemsize


def _shown(v) -> str:
    if isinstance(v, Stride):
        return f"{v.tensor}.stride"
    return repr(v)


def bind_args(spec, launch: Launch, M: int, N: int, params, pointers: dict, workspace_pointer,
              strides: Optional[dict] = None, extents: Optional[dict] = None) -> list:
    """The argument values of one launch, as the kernel takes them: Scalars with their width, 'M' and 'N' as
    int32, 'eps' as float32, a Workspace (or its older 'tmp:...' string) as ``workspace_pointer(workspace)``, a
    tensor name as ``pointers[name]`` (a 64-bit device address), a Pointer at ``offset`` elements into a tensor
    (``extents[name]``: its element count and size), a row stride ('x.stride', Stride) as ``strides[name]`` in
    elements, in the Stride's width; a Struct as its bytes in C layout (verifier.declare.args). A SpecError names a
    value that cannot be bound (unknown tensor, stride of a 1-D tensor, offset outside its tensor, out of range)."""
    binder = _Binder(spec, launch, M, N, params, pointers, workspace_pointer, strides, extents)
    return [binder.arg(a) for a in launch.args]


def bind_model(spec, launch: Launch, M: int, N: int, dt, params, tensors: dict) -> list:
    """bind_args on model_tensors (no memory): what the build step binds to find a malformed launch on any
    machine."""
    def workspace_pointer(ws):
        ws.contents(M, N)  # a count that is no whole number >= 0, or values not fitting it, is a SpecError here too
        ws.size(M, N)
        return np.uint64(_MODEL_BASE - 4096)

    return bind_args(spec, launch, M, N, params, {t: np.uint64(m.address) for t, m in tensors.items()},
                     workspace_pointer,
                     {t: m.stride for t, m in tensors.items() if m.stride is not None},
                     {t: (m.numel, m.itemsize) for t, m in tensors.items()})


@dataclass
class DeviceArray:
    """A kernel's tensor argument in driver memory: ``offset`` bytes into ``buffer`` (past a guard band, say);
    a 2-D one has its rows ``stride`` elements apart (None: N, contiguous)."""

    buffer: cd.DeviceBuffer
    shape: tuple
    offset: int = 0
    stride: Optional[int] = None

    @property
    def ptr(self) -> int:
        return self.buffer.ptr + self.offset


def row_stride(t) -> Optional[int]:
    """The row stride in elements of a 2-D DeviceArray or torch tensor; None for other shapes."""
    if len(tuple(t.shape)) != 2:
        return None
    if isinstance(t, DeviceArray):
        return t.stride if t.stride is not None else int(t.shape[1])
    return int(t.stride(0))


def _itemsize(t, default: Optional[int]) -> Optional[int]:
    """Bytes per element of a torch tensor (its own), else ``default`` (the op's dtype for it)."""
    return int(t.element_size()) if _torch_tensor(t) else default


def _torch_tensor(t):
    torch = sys.modules.get("torch")  # a torch tensor exists only if torch is imported: never import it here
    return torch is not None and isinstance(t, torch.Tensor)


def tensor_address(name: str, t) -> int:
    """The device address of a torch tensor: a CUDA tensor of device 0, the device whose primary context the
    driver launches in (verifier.gpu.libcuda)."""
    if t.device.type != "cuda" or (t.device.index or 0) != 0:
        raise UsageError(f"tensor {name!r} is on {t.device}: CUDA kernels are launched on cuda:0, the first device "
                         "CUDA_VISIBLE_DEVICES leaves visible",
                         fix="move it with .to('cuda:0'), or set CUDA_VISIBLE_DEVICES so its GPU is the first")
    return int(t.data_ptr())


def address(name: str, t) -> int:
    """The 64-bit device address of a DeviceArray, a DeviceBuffer or a torch CUDA tensor."""
    if isinstance(t, (DeviceArray, cd.DeviceBuffer)):
        return int(t.ptr)
    if _torch_tensor(t):
        return tensor_address(name, t)
    raise UsageError(f"tensor {name!r} is a {type(t).__name__}: the CUDA runner takes device memory",
                     fix="pass a torch CUDA tensor, or a verifier.launch.cuda.DeviceArray over a driver buffer")


def current_stream(tensors: dict) -> int:
    """torch's current stream when the caller holds torch tensors (its work on them comes first), else 0: the
    default stream."""
    if any(_torch_tensor(t) for t in tensors.values()):
        import torch

        return int(torch.cuda.current_stream().cuda_stream)
    return 0


@dataclass
class Bound:
    """One launch ready for cuLaunchKernel: the function, the Launch and its packed parameters."""

    fn: int
    launch: Launch
    args: list  # the values bound (np scalars; pointers as np.uint64)
    params: object = None  # kernel_params' void** array
    keep: list = field(default_factory=list)  # the ctypes values it points to, alive as long as this is


@dataclass
class Prepared:
    """The launches of one kernel call bound to device addresses, their stream and workspaces (name ->
    DeviceBuffer, freed by close() or when this is collected)."""

    launches: list  # of Bound
    stream: int
    workspaces: dict

    def close(self) -> None:
        for b in self.workspaces.values():
            b.close()
        self.workspaces = {}


def _function(spec, res, entry: str) -> int:
    """The CUDA function of ``entry`` (an extern "C" name, a C++ name with its template arguments, or the mangled
    symbol: verifier.launch.symbols) in the built cubin ``res``."""
    known = getattr(res, "resources", None) or {}  # empty: nothing to resolve against (a stand-in build)
    symbol = entry if not known or entry in known else resolve(entry, cubin_entries(res), f"{spec.source}")
    try:
        return cd.function(res.cubin, symbol)
    except cd.DriverError as e:
        if "CUDA_ERROR_NOT_FOUND" not in e.text:
            raise
        raise SpecError(f"kernel {spec.name}: entry {entry!r} ({symbol}) not found in {spec.source}: {e.text}",
                        fix="name a __global__ function of the source: its extern \"C\" name, its C++ name with "
                            "template arguments (ns::kernel<float, 256>), or its mangled symbol") from None


def prepare(spec, inputs: dict, outputs: dict, params, dt, arch: Optional[str] = None,
            stream: Optional[int] = None) -> Prepared:
    """Build (cached), load and bind the spec's launches for these tensors (DeviceArrays or torch CUDA tensors;
    an in-out tensor is in both). Raises Unsupported for a refused shape before any driver call, SpecError for a
    malformed launch or an entry the cubin lacks. ``stream``: default current_stream(the tensors)."""
    M, N = inputs["x"].shape[0], inputs["x"].shape[-1]
    reason = spec.check_supported(M, N, dt)
    if reason:
        raise Unsupported(f"{spec.name} refuses M={M}, N={N}, {dt.tag}: {reason}")
    tensors = {**inputs, **outputs}
    pointers = {n: np.uint64(address(n, t)) for n, t in tensors.items()}
    strides = {n: row_stride(t) for n, t in tensors.items() if row_stride(t) is not None}
    itemsizes = {n: _np_dtypes.numpy_dtype(d).itemsize for n, d in tensor_dtypes(spec, dt, params).items()}
    extents = {n: (int(np.prod(tuple(t.shape))), _itemsize(t, itemsizes.get(n))) for n, t in tensors.items()}
    from verifier.ops import get_op
    from verifier.ops.other_names import with_other_names

    op = get_op(spec.op)  # launches(..., layout) may name a tensor by an alias of the op
    sm_count, smem_optin = cd.device_limits()  # this GPU's, as a host asks them
    layout = LaunchLayout(with_other_names(op, {n: alignment_of(p) for n, p in pointers.items()}),
                          with_other_names(op, strides), "this call", sm_count, smem_optin)
    prepared = Prepared([], current_stream(tensors) if stream is None else int(stream), {})
    res = build(spec, arch or probe.device_arch(), dt)

    def workspace_pointer(ws):
        if ws.name not in prepared.workspaces:  # uninitialized, as torch.empty leaves it, unless it has values
            from verifier.dtypes import numpy_dtype

            buf = prepared.workspaces[ws.name] = cd.DeviceBuffer(ws.size(M, N) * numpy_dtype(ws.dtype).itemsize)
            contents = ws.contents(M, N)
            if contents is not None and contents.size:
                buf.upload(contents)
        return np.uint64(prepared.workspaces[ws.name].ptr)

    try:
        for launch in launches_for(spec, M, N, dt, params, layout):
            args = bind_args(spec, launch, M, N, params, pointers, workspace_pointer, strides, extents)
            fn = _function(spec, res, launch.entry)
            if launch.smem > _SMEM_DEFAULT:
                cd.set_max_dynamic_smem(fn, launch.smem, launch.entry)
            b = Bound(fn, launch, args)
            b.params, b.keep = cd.kernel_params(args)
            prepared.launches.append(b)
    except BaseException:
        prepared.close()
        raise
    return prepared


def fault(launch: Launch, e: cd.DriverError) -> RuntimeError:
    """A launch's fault as every caller sees it (verifier.launch.harness.is_cuda_fault recognizes it)."""
    return RuntimeError(f"CUDA error after launch {launch.entry} grid={launch.grid} block={launch.block}: {e.text}")


def launch(prepared: Prepared, sync: bool = True) -> None:
    """Launch every bound kernel on the prepared stream; with ``sync``, synchronize the stream after each so a
    fault is attributed to the launch that caused it (benchmarks pass sync=False)."""
    for b in prepared.launches:
        l = b.launch
        try:
            cd.launch(b.fn, l.grid, l.block, b.params, l.smem, prepared.stream, l.entry, l.cooperative)
            if sync:
                cd.stream_synchronize(prepared.stream, f"launch {l.entry} (synchronize)", cd.LaunchError)
        except cd.LaunchError as e:
            raise fault(l, e) from e


def require_gpu(spec, device: str) -> None:
    if device != "cuda":
        raise ToolMissing(f"{spec.name} is a CUDA kernel and needs a CUDA GPU; device is {device}")


def run_cuda(spec, inputs, outputs, params, dt, device, arch: Optional[str] = None) -> None:
    """The runner of CUDA specs (verifier.launch.runner_for): one call, every launch synchronized, the
    workspaces freed after it."""
    require_gpu(spec, device)
    prepared = prepare(spec, inputs, outputs, params, dt, arch)
    try:
        launch(prepared, sync=True)
    finally:
        prepared.close()


def bench_call(spec, inputs, outputs, params, dt):
    """verifier bench's call: the one CUDA runner on the tensors' device addresses and torch's current stream, where
    the events are; the first launch synchronized (its errors surface here)."""
    import dataclasses

    prepared = prepare(spec, inputs, outputs, params, dt)  # its workspaces live as long as the call
    launch(prepared, sync=True)
    by_stream = {prepared.stream: prepared}  # the same launches on another stream share the workspaces

    def call():  # on torch's stream of the moment: a CUDA graph captures on a stream of its own
        stream = current_stream(inputs)
        if stream not in by_stream:
            by_stream[stream] = dataclasses.replace(prepared, stream=stream)
        launch(by_stream[stream], sync=False)

    return call
