"""The large cases' launch body: tensors of more than 2^31 elements that never go through the host whole.

On a GPU with the virtual memory management API (every one since Pascal on Linux) each (M, N) tensor is a
verifier.gpu.vmm.MappedBuffer: a reserved range whose chunks map onto one small shared allocation holding the
repeated pattern (or the poison), and whose judged rows and guard bands lie on private chunks
(verifier.gpu.aliasing): a few tens of megabytes and milliseconds a tensor, so the case runs at ``ci``. Only the
judged rows' poison is counted (rows on shared chunks alias one another: their outputs race and mean nothing).
Torch kernels get torch tensors over the same mapping (``__cuda_array_interface__``).

On a CPU a Triton kernel runs in the interpreter on the same plan mapped in host memory, only the programs owning
the judged rows run: verifier.launch.large_host (through _Mapped and _run_in here).

Without that API: inputs come as SparseRows (verifier.inputs.layouts): on the device the repeated pattern is
uploaded once and doubled by device-to-device copies down the array, then each judged row is uploaded to its place. Outputs are
poisoned the same way (one poisoned chunk, doubled) between guard bands, as the harness (verifier.launch.harness)
lays out every output. After the launch the guards are read back, the poison is counted row by row in chunks of
CHUNK_BYTES, and only the judged rows are downloaded: the outcome holds them as SparseRows, which the one judge
reads with ``rows=`` (verifier.judge.judge). A CUDA spec gets driver buffers (no torch); Triton kernels and
callables get torch tensors (the counting done where the tensors are). Unwritten elements are confirmed with
the second poison row by row (an element of a correct kernel matches at most one poison, and no op writes two
poisons' worth of integers into one row).
"""
from __future__ import annotations

import numpy as np

from verifier import dtypes as _dt
from verifier.declare import out_layouts as _olay
from verifier.errors import VerifierError
from verifier.inputs import layouts as _lay
from verifier.launch.outcome import (GUARD_BYTES, INT_VIEW, POISON, KernelFault, Outcome, Unwritten,
                                     confirmed_unwritten, out_dtype, signed)
from verifier.launch.strides import restrided
from verifier.ops import get_op

CHUNK_BYTES = 1 << 28  # poison counted this many bytes of an output at a time
SLACK_BYTES = 1 << 30  # beyond the tensors: the context, workspaces, torch's caching


ALIASED_TENSOR_BYTES = 64 << 20  # an aliased (M, N) tensor's physical memory, at most (shared + private chunks)


def aliased() -> bool:
    """Whether this machine's GPU maps aliased ranges (verifier.gpu.vmm); False without a driver or the API."""
    try:
        from verifier.gpu import vmm

        return vmm.supported()
    except Exception:
        return False


def required_bytes(op_name: str, dt, M: int, N: int, params: dict, mapped: bool = False) -> int:
    """Device memory the large case needs at M x N: every input and output of the op (an in-out tensor once, the
    outputs' guard bands included) and SLACK_BYTES; ``mapped``: each (M, N) tensor aliased, ALIASED_TENSOR_BYTES."""
    op = get_op(op_name)
    total = SLACK_BYTES

    def cost(t, itemsize):
        shape = op.shape_of(t, M, N, params)
        if mapped and len(shape) == 2:
            return ALIASED_TENSOR_BYTES
        return int(np.prod(shape)) * itemsize

    for t in op.inputs:
        if t not in op.inouts:
            total += cost(t, _dt.numpy_dtype(op.input_dtype(t, dt, params)).itemsize)
    for t in op.outputs:
        total += cost(t, _dt.numpy_dtype(out_dtype(t, op, dt, params)).itemsize) + 2 * GUARD_BYTES
    return total


def execute_large(run, spec, inputs_np: dict, dt, params: dict, device: str, check_poison: bool, layout,
                  once=None) -> Outcome:
    """Run ``run`` on the large case's inputs (SparseRows for the 2-D ones) with poisoned, guarded outputs; the
    outcome's outputs are the judged rows (SparseRows) and ``rows`` says which. ``once``: one run (default: device
    memory or plain torch tensors; verifier.launch.large_host: the interpreter on aliased host memory)."""
    op = get_op(spec.op)
    once = once or _run_once
    M, N = inputs_np["x"].shape
    rows = _lay.judged_rows(M, N, layout.wrap, layout.stride)
    inputs_np = restrided(spec, op, inputs_np, dt, params, layout)
    out, counts = once(run, spec, op, inputs_np, dt, params, device, 0, rows)
    if check_poison and any(c.any() for c in counts.values()):
        second, again = once(run, spec, op, inputs_np, dt, params, device, 1, rows)
        counts = {k: np.where(c > 0, again.get(k, np.zeros_like(c)), 0) for k, c in counts.items()}
        counts = {k: confirmed_unwritten(k, c, out, second, rows, op, dt, params, M, N) for k, c in counts.items()}
    for name, c in counts.items():
        if c.any():
            r = int(np.flatnonzero(c)[0])
            where = f"first at index ({r},)" if len(op.shape_of(name, M, N, params)) == 1 else f"first in row {r}"
            out.unwritten[name] = Unwritten(int(c.sum()), int(np.prod(op.shape_of(name, M, N, params))), where)
    out.rows = rows
    return out


def _run_once(run, spec, op, inputs_np, dt, params, device, which: int, rows) -> tuple:
    cuda_spec = not getattr(spec, "imports_torch", True)  # launched on raw driver memory
    mem = _Driver() if cuda_spec else _Torch(device)
    if (cuda_spec or device == "cuda") and aliased():
        mem = _Mapped(mem, rows, torch_views=not cuda_spec)
    try:
        return _run_in(mem, run, spec, op, inputs_np, dt, params, device, which, rows)
    finally:
        mem.close()  # after _run_in's frame is gone: nothing holds the device memory any more


def _run_in(mem, run, spec, op, inputs_np, dt, params, device, which: int, rows) -> tuple:
    inputs_np = dict(inputs_np)
    strided_names, stride = inputs_np.pop("__strided__", (set(), None))
    M, N = inputs_np["x"].shape
    inputs, outputs = {}, {}
    aliases = getattr(spec, "outputs_alias", {})
    held = {t: t if t in op.inouts else aliases.get(t) for t in op.outputs}  # the input an output's buffer also is
    for name, v in inputs_np.items():
        if name not in op.outputs and name not in held.values():
            inputs[name] = mem.tensor(v)
    for name in op.outputs:
        dtype = out_dtype(name, op, dt, params)
        src, shape = held[name], op.shape_of(name, M, N, params)
        declared = _olay.strides_of(spec, name, shape, M, N, params, dt)  # rows a declared stride apart (gate)
        outputs[name] = mem.output(shape, dtype, POISON[dtype][which], inputs_np[src] if src else None,
                                   stride=declared[0] if declared else stride if name in strided_names else None)
        # (None: its own row length)
        if src:  # the kernel updates it in place / writes the output over it
            inputs[src] = outputs[name]
    mem.run(run, spec, inputs, outputs, params, dt, device)
    result, counts = Outcome(outputs={}), {}
    for name in op.outputs:
        dtype = out_dtype(name, op, dt, params)
        hits = mem.guard_hits(outputs[name])
        if hits:
            result.guard_hits[name] = hits
        if not held[name]:  # a buffer that started with values holds no poison to count
            counts[name] = mem.poison_counts(outputs[name])
        if len(op.shape_of(name, M, N, params)) == 2:
            result.outputs[name] = _lay.SparseRows((M, N), _dt.numpy_dtype(dtype),
                                                   dict(zip(rows.tolist(), mem.rows(outputs[name], rows))))
        else:
            result.outputs[name] = mem.whole(outputs[name])
    return result, counts


class _Buffer:
    """An output in its guarded buffer: ``g`` guard elements, ``n`` elements of ``shape``, ``g`` guard elements."""

    def __init__(self, handle, view, shape, dtype, g, poison):
        self.handle, self.view, self.shape, self.dtype, self.g, self.poison = handle, view, shape, dtype, g, poison
        self.itemsize = _dt.numpy_dtype(dtype).itemsize
        self.ints = np.dtype(INT_VIEW[self.itemsize])
        self.n = int(np.prod(shape))

    def row_chunks(self):
        """(first row, rows) of the chunks the poison is counted in."""
        per = self.shape[1] if len(self.shape) == 2 else 1
        step = max(1, CHUNK_BYTES // (per * self.itemsize))
        for r in range(0, self.shape[0], step):
            yield r, min(step, self.shape[0] - r)


def _views(tensors: dict) -> dict:
    """What the kernel gets: an output's view into its guarded buffer, an input as it is."""
    return {k: v.view if isinstance(v, _Buffer) else v for k, v in tensors.items()}


def _hits(lo: np.ndarray, hi: np.ndarray, p, itemsize: int) -> list:
    hits = [("before", int(len(lo) - i) * itemsize) for i in np.nonzero(lo != p)[0][-8:]]
    return hits + [("after", int(i) * itemsize) for i in np.nonzero(hi != p)[0][:8]]


class _Driver:
    """Driver buffers (verifier.gpu.libcuda) for a CUDA spec: no torch in the process."""

    def __init__(self):
        from verifier.gpu import libcuda as cd

        self.cd, self.bufs = cd, []

    def _alloc(self, nbytes):
        self.bufs.append(self.cd.DeviceBuffer(nbytes))
        return self.bufs[-1]

    def _fill_rows(self, buf, offset: int, v: _lay.SparseRows) -> None:
        isz = v.dtype.itemsize
        buf.fill(offset, np.ascontiguousarray(v.pattern, dtype=v.dtype), v.span * isz)
        for r, values in v.rows.items():
            buf.upload(np.ascontiguousarray(values, dtype=v.dtype), offset + r * v.stride * isz)

    def tensor(self, v):
        from verifier.launch.cuda import DeviceArray

        if isinstance(v, _lay.SparseRows):
            buf = self._alloc(v.span * v.dtype.itemsize)
            self._fill_rows(buf, 0, v)
            return DeviceArray(buf, v.shape, 0, None if v.stride == v.shape[1] else v.stride)
        a = np.ascontiguousarray(v)
        buf = self._alloc(a.nbytes)
        buf.upload(a)
        return DeviceArray(buf, a.shape)

    def output(self, shape, dtype, poison_bits, middle=None, stride=None) -> _Buffer:
        """Contiguous (a row stride only on aliased memory: _Mapped)."""
        from verifier.launch.cuda import DeviceArray

        itemsize = _dt.numpy_dtype(dtype).itemsize
        g, n = GUARD_BYTES // itemsize, int(np.prod(shape))
        p = signed(poison_bits, itemsize)
        buf = self._alloc((2 * g + n) * itemsize)
        buf.fill(0, np.full(GUARD_BYTES // itemsize, p, dtype=INT_VIEW[itemsize]), (2 * g + n) * itemsize)
        if middle is not None:
            self._fill_rows(buf, g * itemsize, middle)
        return _Buffer(buf, DeviceArray(buf, tuple(shape), g * itemsize), tuple(shape), dtype, g, p)

    def run(self, run, spec, inputs, outputs, params, dt, device):
        try:
            run(spec, _views(inputs), _views(outputs), params, dt, device)
        except self.cd.DriverError as e:
            raise KernelFault(e) from e
        except VerifierError:
            raise
        except Exception as e:
            raise KernelFault(e) from e

    def guard_hits(self, b: _Buffer) -> list:
        lo = b.handle.download(b.ints, b.g)
        hi = b.handle.download(b.ints, b.g, (b.g + b.n) * b.itemsize)
        return _hits(lo, hi, b.poison, b.itemsize)

    def poison_counts(self, b: _Buffer) -> np.ndarray:
        per = b.shape[1] if len(b.shape) == 2 else 1
        counts = np.zeros(b.shape[0], dtype=np.int64)
        for r, k in b.row_chunks():
            a = b.handle.download(b.ints, (k, per), (b.g + r * per) * b.itemsize)
            counts[r:r + k] = (a == b.poison).sum(axis=1)
        return counts

    def rows(self, b: _Buffer, rows) -> list:
        N = b.shape[1]
        return [b.handle.download(b.ints, N, (b.g + int(r) * N) * b.itemsize).view(_dt.numpy_dtype(b.dtype))
                for r in rows]

    def whole(self, b: _Buffer) -> np.ndarray:
        return b.handle.download(b.ints, b.n, b.g * b.itemsize).view(_dt.numpy_dtype(b.dtype)).reshape(b.shape)

    def close(self):
        for b in self.bufs:
            b.close()
        self.bufs = []


class _Torch:
    """Torch tensors on ``device`` for Triton kernels and callables."""

    def __init__(self, device):
        import torch

        self.torch, self.device, self.keep = torch, device, []

    def _rows_into(self, t, v: _lay.SparseRows, flat=None) -> None:
        flat = t.view(-1) if flat is None else flat  # the pattern over every element the rows span
        K = min(len(v.pattern), flat.shape[0])
        flat[:K] = _dt.from_numpy(np.ascontiguousarray(v.pattern[:K], dtype=v.dtype), self.device)
        done = K
        while done < flat.shape[0]:
            step = min(done, flat.shape[0] - done)
            flat[done:done + step] = flat[:step]
            done += step
        for r, values in v.rows.items():
            t[r] = _dt.from_numpy(np.ascontiguousarray(values, dtype=v.dtype), self.device)

    def tensor(self, v):
        if isinstance(v, _lay.SparseRows):
            flat = self.torch.empty((v.span,), dtype=_dt.torch_dtype(_dt.canonical(v.dtype)), device=self.device)
            t = flat.as_strided(v.shape, (v.stride, 1))
            self._rows_into(t, v, flat)
        else:
            t = _dt.from_numpy(np.ascontiguousarray(v), self.device)
        self.keep.append(t)
        return t

    def output(self, shape, dtype, poison_bits, middle=None, stride=None) -> _Buffer:
        """Contiguous (a row stride only on aliased memory: _Mapped)."""
        torch = self.torch
        itemsize = _dt.numpy_dtype(dtype).itemsize
        g, n = GUARD_BYTES // itemsize, int(np.prod(shape))
        p = signed(poison_bits, itemsize)
        whole = torch.full((2 * g + n,), p, dtype=getattr(torch, INT_VIEW[itemsize]), device=self.device)
        view = whole.view(_dt.torch_dtype(dtype))[g:g + n].view(tuple(shape))
        if middle is not None:
            self._rows_into(view, middle)
        self.keep.append(whole)
        return _Buffer(whole, view, tuple(shape), dtype, g, p)

    def run(self, run, spec, inputs, outputs, params, dt, device):
        try:
            run(spec, _views(inputs), _views(outputs), params, dt, device)
            if device == "cuda":
                self.torch.cuda.synchronize()
        except VerifierError:
            raise
        except Exception as e:
            raise KernelFault(e) from e

    def guard_hits(self, b: _Buffer) -> list:
        lo = b.handle[:b.g].cpu().numpy()
        hi = b.handle[b.g + b.n:].cpu().numpy()
        return _hits(lo, hi, b.poison, b.itemsize)

    def poison_counts(self, b: _Buffer) -> np.ndarray:
        per = b.shape[1] if len(b.shape) == 2 else 1
        body = b.handle[b.g:b.g + b.n].view(b.shape[0], per)
        counts = np.zeros(b.shape[0], dtype=np.int64)
        for r, k in b.row_chunks():
            counts[r:r + k] = (body[r:r + k] == b.poison).sum(dim=1).cpu().numpy()
        return counts

    def rows(self, b: _Buffer, rows) -> list:
        idx = self.torch.as_tensor(np.asarray(rows), device=b.view.device)
        got = _dt.to_numpy(b.view.index_select(0, idx).cpu())
        return list(got)

    def whole(self, b: _Buffer) -> np.ndarray:
        return _dt.to_numpy(b.view.cpu())

    def close(self):
        self.keep = []
        if self.device == "cuda":
            self.torch.cuda.empty_cache()  # the next case (or kernel) needs the memory back, and the gate asks the driver


class _MappedOut(_Buffer):
    """An output on a MappedBuffer: guard chunks, then the (M, N) rows ``stride`` apart, then guard chunks."""

    def __init__(self, handle, view, shape, dtype, g, poison, stride):
        super().__init__(handle, view, shape, dtype, g, poison)
        self.stride = stride


class _DeviceMaps:
    """Aliased device memory (verifier.gpu.vmm): chunks of the allocation granularity."""

    def __init__(self):
        from verifier.gpu import vmm

        self.vmm = vmm
        self.chunk = vmm.granularity()
        self.shared_chunks = vmm.shared_chunks(self.chunk)

    def buffer(self, plan, itemsize: int):
        return self.vmm.MappedBuffer(plan)

    def torch_view(self, buf, offset: int, shape, stride: int, dtype):
        """A CUDA torch tensor over the mapping (ints of the element's width, viewed as the dtype: the array
        interface names no bfloat16)."""
        import torch

        isz = _dt.numpy_dtype(dtype).itemsize

        class _Iface:
            __cuda_array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(INT_VIEW[isz]).str, "version": 3,
                                        "data": (buf.ptr + offset, False), "strides": (stride * isz, isz)}

        t = torch.as_tensor(_Iface(), device="cuda")
        return t.view(_dt.torch_dtype(_dt.canonical(dtype)))

    def synchronize(self) -> None:
        from verifier.gpu import libcuda
        libcuda.synchronize()

    def settle(self) -> None:
        """synchronize(); a fault it reports was the call's, raised there (or next): not raised over it here."""
        try:
            self.synchronize()
        except Exception:
            pass


class _Mapped:
    """(M, N) tensors on aliased ranges (``maps``: _DeviceMaps, or verifier.launch.large_host's host maps), judged
    rows and guards private; everything else (1-D tensors, the launch) through ``inner`` (_Driver or _Torch).
    ``torch_views``: the kernel gets torch tensors over the mappings. ``fill=False``: no pattern nor poison written
    (a run that runs no program)."""

    def __init__(self, inner, rows, maps=None, torch_views: bool = False, fill: bool = True):
        maps = maps if maps is not None else _DeviceMaps()
        self.maps, self.inner, self.judged, self.torch_views = maps, inner, [int(r) for r in rows], torch_views
        self.chunk, self.fill = maps.chunk, fill
        self.bufs = []

    def _map(self, shape, stride: int, itemsize: int, guard: int = 0):
        from verifier.gpu import aliasing

        plan = aliasing.tensor_plan(shape, stride, itemsize, self.judged, self.chunk, self.maps.shared_chunks, guard)
        self.bufs.append(self.maps.buffer(plan, itemsize))
        return self.bufs[-1]

    def _view(self, buf, offset: int, shape, stride: int, dtype):
        """What the kernel gets: a DeviceArray, or a torch tensor over the mapping."""
        from verifier.launch.cuda import DeviceArray

        if not self.torch_views:
            return DeviceArray(buf, tuple(shape), offset, None if stride == shape[1] else stride)
        return self.maps.torch_view(buf, offset, shape, stride, dtype)

    def _put(self, buf, base: int, v: _lay.SparseRows) -> None:
        """The pattern everywhere (element e of the tensor at byte base + e*itemsize), then the judged rows."""
        isz = v.dtype.itemsize
        if self.fill:
            buf.fill_physical(np.ascontiguousarray(v.pattern, dtype=v.dtype), base)
        for r, values in v.rows.items():
            buf.upload(np.ascontiguousarray(values, dtype=v.dtype), base + r * v.stride * isz)

    def tensor(self, v):
        if not isinstance(v, _lay.SparseRows):
            return self.inner.tensor(v)
        buf = self._map(v.shape, v.stride, v.dtype.itemsize)
        self._put(buf, 0, v)
        return self._view(buf, 0, v.shape, v.stride, _dt.canonical(v.dtype))

    def output(self, shape, dtype, poison_bits, middle=None, stride=None):
        if len(shape) != 2:
            return self.inner.output(shape, dtype, poison_bits, middle)
        M, N = shape
        stride = middle.stride if middle is not None else stride or N
        isz = _dt.numpy_dtype(dtype).itemsize
        ints = np.dtype(INT_VIEW[isz])
        p = signed(poison_bits, isz)
        span = ((M - 1) * stride + N) * isz
        g = GUARD_BYTES
        buf = self._map(shape, stride, isz, g)
        poison = np.full(GUARD_BYTES // isz, p, dtype=ints)
        if middle is None:
            if self.fill:
                buf.fill_physical(poison)
        else:
            self._put(buf, g, middle)
            buf.upload(poison, 0)
            buf.upload(poison, g + span)
        view = self._view(buf, g, shape, stride, dtype)
        return _MappedOut(buf, view, tuple(shape), dtype, g // isz, p, stride)

    def run(self, run, spec, inputs, outputs, params, dt, device):
        self.inner.run(run, spec, inputs, outputs, params, dt, device)
        if self.torch_views:
            self.maps.synchronize()

    def guard_hits(self, b) -> list:
        if not isinstance(b, _MappedOut):
            return self.inner.guard_hits(b)
        lo = b.handle.download(b.ints, b.g)
        hi = b.handle.download(b.ints, b.g, b.g * b.itemsize + ((b.shape[0] - 1) * b.stride + b.shape[1]) * b.itemsize)
        return _hits(lo, hi, b.poison, b.itemsize)

    def _row(self, b, r: int) -> np.ndarray:
        return b.handle.download(b.ints, b.shape[1], (b.g + r * b.stride) * b.itemsize)

    def poison_counts(self, b) -> np.ndarray:
        """Poison in the judged rows only: the others lie on shared chunks, written by every row aliasing them."""
        if not isinstance(b, _MappedOut):
            return self.inner.poison_counts(b)
        counts = np.zeros(b.shape[0], dtype=np.int64)
        for r in self.judged:
            counts[r] = int((self._row(b, r) == b.poison).sum())
        return counts

    def rows(self, b, rows) -> list:
        if not isinstance(b, _MappedOut):
            return self.inner.rows(b, rows)
        return [self._row(b, int(r)).view(_dt.numpy_dtype(b.dtype)) for r in rows]

    def whole(self, b) -> np.ndarray:
        return self.inner.whole(b)

    def close(self):
        try:  # the work queued on the mappings first: a call that raised (torch out of memory) leaves earlier
            self.bufs and self.maps.settle()  # launches running, and unmapping under them faulted (an H100, 2026-12-05)
            self.inner.close()
        finally:
            for b in self.bufs:
                b.close()
            self.bufs = []
