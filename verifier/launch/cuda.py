"""Runner for CudaKernel: nvcc → cubin (cached) → launches through the CUDA driver API (verifier.gpu.libcuda) on
raw 64-bit device addresses. The one CUDA launch path, whoever holds the memory:

- the harness (every process kind: check child, pytest plugin, sanitizer child) hands it ``DeviceArray``s, views
  into driver buffers, and launches on the default stream: no torch in the process;
- benchmarks and users hand it torch CUDA tensors (``data_ptr()``), launched on torch's current stream so they are
  ordered with torch's work on those tensors.

Pointers go to the kernel as 64-bit integers, so bf16/fp8 need no dtype support from anyone. ``prepare`` checks
the refusal before anything runs, loads the cubin, binds every launch and allocates the workspaces (uninitialized,
one buffer per name, per call); ``launch`` launches them, with ``sync`` a stream synchronize after each so a fault
is raised naming the launch that caused it (benchmarks pass sync=False).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from verifier.declare.kernels import Launch, Scalar, stride_of, workspace_of
from verifier.errors import SpecError, ToolMissing, Unsupported, UsageError
from verifier.gpu import libcuda as cd
from verifier.gpu import probe
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
    try:
        return {"int32": np.int32, "int64": np.int64, "float32": np.float32, "uint32": np.uint32}[kind](value)
    except KeyError:
        raise SpecError(f"Scalar kind {kind!r} is not supported", fix="use int32, int64, uint32 or float32") from None


def launches_for(spec, M: int, N: int, dt, params) -> list[Launch]:
    from verifier.declare.usercode import call

    launches = call(spec, "launches", spec.launches, M, N, dt, params)
    if not launches or not all(isinstance(l, Launch) for l in launches):
        raise SpecError(
            f"kernel {spec.name}: launches(M, N, dtypes, params) must return a non-empty list of Launch",
            fix="return [Launch(entry=..., grid=..., block=..., args=...)]",
        )
    return launches


def strided_tensors(spec, M: int, N: int, dt, params) -> set:
    """The tensors whose row stride some launch of the spec passes ('x.stride', Stride('x', 'int64')): the ones the
    strided cases lay out with gaps between rows (the others stay contiguous)."""
    return {s.tensor for launch in launches_for(spec, M, N, dt, params) for s in map(stride_of, launch.args) if s}


def bind_args(spec, launch: Launch, M: int, N: int, params, pointers: dict, workspace_pointer,
              strides: Optional[dict] = None) -> list:
    """The argument values of one launch: Scalars with their width, 'M' and 'N' as int32, 'eps' as float32, a
    Workspace (or its older 'tmp:...' string) as ``workspace_pointer(workspace)``, a tensor name as
    ``pointers[name]`` (a 64-bit device address), a row stride ('x.stride', Stride) as ``strides[name]`` in
    elements, in the Stride's width."""
    args = []
    for a in launch.args:
        stride = stride_of(a)
        if isinstance(a, Scalar):
            args.append(scalar_arg(a.kind, a.value))
        elif stride is not None:
            if stride.tensor not in (strides or {}):
                rows = sorted(strides or {})
                raise SpecError(f"kernel {spec.name}: launch {launch.entry} passes the row stride of {stride.tensor!r}, "
                                "which is not a 2-D tensor of the op",
                                fix=f"name one of {rows} ('x.stride' or Stride('x', 'int64'))")
            args.append(scalar_arg(stride.kind, strides[stride.tensor]))
        elif a == "M":
            args.append(np.int32(M))
        elif a == "N":
            args.append(np.int32(N))
        elif a == "eps":
            args.append(np.float32(params["eps"]))
        elif workspace_of(a) is not None:
            args.append(workspace_pointer(workspace_of(a)))
        elif isinstance(a, str) and a in pointers:
            args.append(pointers[a])
        else:
            raise SpecError(
                f"kernel {spec.name}: launch {launch.entry} has argument {a!r}",
                fix=f"use tensor names {sorted(pointers)}, 'M', 'N', 'eps', '<tensor>.stride', Workspace(...) or Scalar",
            )
    return args


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
    prepared = Prepared([], current_stream(tensors) if stream is None else int(stream), {})
    res = build(spec, arch or probe.device_arch(), dt)

    def workspace_pointer(ws):
        if ws.name not in prepared.workspaces:  # uninitialized, as torch.empty leaves it
            from verifier.dtypes import numpy_dtype

            prepared.workspaces[ws.name] = cd.DeviceBuffer(ws.size(M, N) * numpy_dtype(ws.dtype).itemsize)
        return np.uint64(prepared.workspaces[ws.name].ptr)

    try:
        for launch in launches_for(spec, M, N, dt, params):
            args = bind_args(spec, launch, M, N, params, pointers, workspace_pointer, strides)
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
            cd.launch(b.fn, l.grid, l.block, b.params, l.smem, prepared.stream, l.entry)
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
