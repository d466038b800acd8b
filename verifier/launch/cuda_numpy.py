"""CudaKernel specs launched through the CUDA driver API (verifier.gpu.libcuda) on device buffers: no torch, no CuPy.

The twin of verifier.launch.cuda's prepare/launch, and it must stay one: the same refusal check before anything
runs, the same cubin (``build``), launches (``launches_for``) and argument binding (Scalars, 'M', 'N', 'eps',
'tmp:' workspaces left uninitialized as torch.empty leaves them, tensor names), the same SpecError for an entry
the cubin lacks, every launch bound before the first runs, a synchronize after each, and a fault raised as the
torch path raises it: ``RuntimeError('CUDA error after launch ENTRY grid=.. block=..: CUDA_ERROR_...')``.
verifier.launch.harness builds the guarded, poisoned buffers and reads them back.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verifier.dtypes import numpy_dtype
from verifier.errors import SpecError, Unsupported
from verifier.gpu import libcuda as cd
from verifier.gpu import probe
from verifier.launch.cuda import bind_args, build, launches_for


@dataclass
class Pointer:
    """Where a kernel's tensor argument starts: ``offset`` bytes into ``buffer`` (past a guard band)."""

    buffer: cd.DeviceBuffer
    offset: int = 0

    def arg(self) -> np.uint64:
        return np.uint64(self.buffer.ptr + self.offset)


def _function(spec, cubin: Path, entry: str) -> int:
    try:
        return cd.function(cubin, entry)
    except cd.DriverError as e:
        if "CUDA_ERROR_NOT_FOUND" not in e.text:
            raise
        raise SpecError(f"kernel {spec.name}: entry {entry!r} not found in {spec.source}: {e.text}",
                        fix="the entry must be an extern \"C\" __global__ function of that name") from None


def launch_spec(spec, tensors: dict, M: int, N: int, dt, params: dict, arch: str | None = None) -> None:
    """Run one call of ``spec`` (all its launches) on ``tensors``: name -> Pointer. Raises Unsupported for a
    refused shape before anything runs, SpecError for a malformed launch, RuntimeError for a CUDA fault."""
    reason = spec.check_supported(M, N, dt)
    if reason:
        raise Unsupported(f"{spec.name} refuses M={M}, N={N}, {dt.tag}: {reason}")
    cubin = build(spec, arch or probe.device_arch(), dt).cubin
    tmp: dict = {}
    try:
        bound = []
        pointers = {n: p.arg() for n, p in tensors.items()}

        def workspace_pointer(ws):
            if ws.name not in tmp:  # uninitialized, as torch.empty leaves it
                tmp[ws.name] = cd.DeviceBuffer(ws.size(M, N) * numpy_dtype(ws.dtype).itemsize)
            return np.uint64(tmp[ws.name].ptr)

        for launch in launches_for(spec, M, N, dt, params):
            args = bind_args(spec, launch, M, N, params, pointers, workspace_pointer)
            bound.append((_function(spec, cubin, launch.entry), launch, args))
        for fn, launch, args in bound:
            try:
                cd.launch(fn, launch.grid, launch.block, args, launch.smem, name=launch.entry)
            except cd.LaunchError as e:
                raise RuntimeError(f"CUDA error after launch {launch.entry} grid={launch.grid} "
                                   f"block={launch.block}: {e.text}") from e
    finally:
        for b in tmp.values():
            b.close()


@dataclass
class Result:
    outputs: dict  # name -> numpy array (the output dtype, the op's shape)
    arch: str
    cubin: Path


def run_numpy(spec, inputs: dict, outputs: dict, params: dict, dt, arch: str | None = None) -> Result:
    """Run a CudaKernel spec once on host arrays, without guards: ``inputs`` name -> array, ``outputs`` name ->
    array whose contents (a poison, say) are uploaded first and whose shape and dtype the results take."""
    x = inputs["x"]
    M, N = x.shape[0], x.shape[-1]
    arch = arch or probe.device_arch()
    bufs = {n: cd.DeviceBuffer.from_array(a) for n, a in {**inputs, **outputs}.items()}
    try:
        launch_spec(spec, {n: Pointer(b) for n, b in bufs.items()}, M, N, dt, params, arch)
        result = {n: bufs[n].download(a.dtype, a.shape) for n, a in outputs.items()}
    finally:
        for b in bufs.values():
            b.close()
    return Result(result, arch, build(spec, arch, dt).cubin)
