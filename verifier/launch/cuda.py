"""Runner for CudaKernel: nvcc → cubin (cached) → CuPy launch on torch CUDA tensors, no copies.

Pointers go to the kernel as 64-bit integers (``np.uint64(t.data_ptr())``), so bf16/fp8 tensors need no
dtype support from CuPy. Launches go on torch's current stream; after every launch the device is
synchronized and errors are raised with the launch that caused them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verifier.declare.kernels import Launch, Scalar, workspace_of
from verifier.errors import SpecError, ToolMissing, Unsupported
from verifier.gpu import probe

_MODULES: dict[str, object] = {}


def _cupy():
    try:
        import cupy
    except ImportError:
        raise ToolMissing(
            "CuPy is not installed: CUDA kernels are launched through CuPy",
            fix="pip install 'kernel-verifier[gpu]' (cupy-cuda12x), or cupy-cuda13x on CUDA 13 drivers",
        ) from None
    return cupy


def build(spec, arch: str, dt=None):
    """The cached cubin of ``spec`` for ``arch``, with the -D macros ``spec.defines(dt)`` selects."""
    from verifier.declare.usercode import call
    from verifier.toolchain.nvcc import compile_cubin

    defines = call(spec, "defines", spec.defines, dt) if dt is not None else {}
    return compile_cubin(spec.source_path(), arch=arch, defines=defines, flags=tuple(spec.extra_flags))


def _module(cubin_path: str):
    cp = _cupy()
    mod = _MODULES.get(cubin_path)
    if mod is None:
        mod = cp.RawModule(path=cubin_path)
        _MODULES[cubin_path] = mod
    return mod


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


def bind_args(spec, launch: Launch, M: int, N: int, params, pointers: dict, workspace_pointer) -> list:
    """The argument values of one launch: Scalars with their width, 'M' and 'N' as int32, 'eps' as float32,
    a Workspace (or its older 'tmp:...' string) as ``workspace_pointer(workspace, M, N)``, a tensor name as ``pointers[name]`` (a 64-bit device address).
    Shared by the torch path (prepare) and the driver path (verifier.launch.cuda_numpy)."""
    args = []
    for a in launch.args:
        if isinstance(a, Scalar):
            args.append(scalar_arg(a.kind, a.value))
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
                fix=f"use tensor names {sorted(pointers)}, 'M', 'N', 'eps', Workspace(...) or Scalar",
            )
    return args


@dataclass
class Prepared:
    """Launches of one kernel call with their argument tuples bound to tensors."""

    launches: list  # (function, Launch, args tuple)
    stream: object
    tmp: dict


def prepare(spec, inputs, outputs, params, dt, arch: str | None = None) -> Prepared:
    """Build (cached), load and bind the spec's launches for these tensors. Raises Unsupported first."""
    import torch

    x = inputs["x"]
    M, N = x.shape[0], x.shape[-1]
    reason = spec.check_supported(M, N, dt)
    if reason:
        raise Unsupported(f"{spec.name} refuses M={M}, N={N}, {dt.tag}: {reason}")
    result = build(spec, arch or probe.device_arch(), dt)
    mod = _module(str(result.cubin))
    cp = _cupy()
    tensors = {**inputs, **outputs}
    tmp: dict = {}
    bound = []
    pointers = {n: np.uint64(t.data_ptr()) for n, t in tensors.items()}
    for launch in launches_for(spec, M, N, dt, params):
        args = bind_args(spec, launch, M, N, params, pointers, lambda a: np.uint64(_tmp(tmp, a, M, N).data_ptr()))
        try:
            fn = mod.get_function(launch.entry)
        except Exception as e:
            raise SpecError(
                f"kernel {spec.name}: entry {launch.entry!r} not found in {spec.source}: {e}",
                fix="the entry must be an extern \"C\" __global__ function of that name",
            ) from None
        if launch.smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = launch.smem
        bound.append((fn, launch, tuple(args)))
    return Prepared(bound, torch_stream_for_cupy(cp, torch.cuda.current_stream()), tmp)


class _StreamHandle:
    """A cudaStream_t offered through the CUDA stream protocol (``__cuda_stream__`` -> (version, handle))."""

    def __init__(self, handle: int):
        self.handle = int(handle)

    def __cuda_stream__(self):
        return (0, self.handle)


def torch_stream_for_cupy(cp, stream):
    """torch's stream as a CuPy stream, so the kernels are ordered with torch's work on the inputs.
    CuPy 14 deprecates ExternalStream for Stream.from_external (the CUDA stream protocol)."""
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is not None:
        try:
            return from_external(_StreamHandle(stream.cuda_stream))
        except TypeError:  # a CuPy whose from_external does not take the protocol: the older way still works
            pass
    return cp.cuda.ExternalStream(stream.cuda_stream, stream.device.index)


def launch(prepared: Prepared, sync: bool = True) -> None:
    """Launch every bound kernel on torch's current stream; with ``sync``, synchronize after each so
    a fault is attributed to the launch that caused it (benchmarks pass sync=False)."""
    for fn, l, args in prepared.launches:
        with prepared.stream:
            fn(tuple(l.grid), tuple(l.block), args, shared_mem=l.smem)
        if sync:
            try:
                prepared.stream.synchronize()
            except Exception as e:
                raise RuntimeError(f"CUDA error after launch {l.entry} grid={l.grid} block={l.block}: {e}") from e


def run_cuda(spec, inputs, outputs, params, dt, device, arch: str | None = None) -> None:
    if device != "cuda":
        raise ToolMissing(f"{spec.name} is a CUDA kernel and needs a CUDA GPU; device is {device}")
    launch(prepare(spec, inputs, outputs, params, dt, arch), sync=True)


def _tmp(cache, ws, M: int, N: int):
    """A workspace as torch.empty leaves it (uninitialized), one per workspace name."""
    import torch

    from verifier.dtypes import torch_dtype

    if ws.name not in cache:
        cache[ws.name] = torch.empty(ws.size(M, N), dtype=torch_dtype(ws.dtype), device="cuda")
    return cache[ws.name]
