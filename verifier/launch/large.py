"""The large-index case's launch body: tensors of more than 2^31 elements that never go through the host whole.

Inputs come as SparseRows (verifier.inputs.layouts): on the device the repeated block of rows is uploaded once and
doubled by device-to-device copies down the array, then each judged row is uploaded to its place. Outputs are
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
from verifier.errors import VerifierError
from verifier.inputs import layouts as _lay
from verifier.launch.outcome import (GUARD_BYTES, INT_VIEW, POISON, KernelFault, Outcome, Unwritten, out_dtype,
                                     signed)
from verifier.ops import get_op

CHUNK_BYTES = 1 << 28  # poison counted this many bytes of an output at a time
SLACK_BYTES = 1 << 30  # beyond the tensors: the context, workspaces, torch's caching


def required_bytes(op_name: str, dt, M: int, N: int, params: dict) -> int:
    """Device memory the large case needs at M x N: every input and output of the op (an in-out tensor once, the
    outputs' guard bands included) and SLACK_BYTES."""
    op = get_op(op_name)
    total = SLACK_BYTES
    for t in op.inputs:
        if t not in op.inouts:
            total += int(np.prod(op.shape_of(t, M, N))) * _dt.numpy_dtype(op.input_dtype(t, dt, params)).itemsize
    for t in op.outputs:
        total += int(np.prod(op.shape_of(t, M, N, params))) * _dt.numpy_dtype(out_dtype(t, op, dt, params)).itemsize
        total += 2 * GUARD_BYTES
    return total


def execute_large(run, spec, inputs_np: dict, dt, params: dict, device: str, check_poison: bool, layout) -> Outcome:
    """Run ``run`` on the large case's inputs (SparseRows for the 2-D ones) with poisoned, guarded outputs; the
    outcome's outputs are the judged rows (SparseRows) and ``rows`` says which."""
    op = get_op(spec.op)
    M, N = inputs_np["x"].shape
    rows = _lay.judged_rows(M, N, layout.wrap)
    out, counts = _run_once(run, spec, op, inputs_np, dt, params, device, 0, rows)
    if check_poison and any(c.any() for c in counts.values()):
        _, again = _run_once(run, spec, op, inputs_np, dt, params, device, 1, rows)
        counts = {k: np.where(c > 0, again.get(k, np.zeros_like(c)), 0) for k, c in counts.items()}
    for name, c in counts.items():
        if c.any():
            r = int(np.flatnonzero(c)[0])
            where = f"first at index ({r},)" if len(op.shape_of(name, M, N)) == 1 else f"first in row {r}"
            out.unwritten[name] = Unwritten(int(c.sum()), int(np.prod(op.shape_of(name, M, N))), where)
    out.rows = rows
    return out


def _run_once(run, spec, op, inputs_np, dt, params, device, which: int, rows) -> tuple:
    mem = _Driver() if getattr(spec, "kind", None) == "cuda" else _Torch(device)
    try:
        return _run_in(mem, run, spec, op, inputs_np, dt, params, device, which, rows)
    finally:
        mem.close()  # after _run_in's frame is gone: nothing holds the device memory any more


def _run_in(mem, run, spec, op, inputs_np, dt, params, device, which: int, rows) -> tuple:
    M, N = inputs_np["x"].shape
    inputs, outputs = {}, {}
    aliases = getattr(spec, "outputs_alias", {})
    held = {t: t if t in op.inouts else aliases.get(t) for t in op.outputs}  # the input an output's buffer also is
    for name, v in inputs_np.items():
        if name not in op.outputs and name not in held.values():
            inputs[name] = mem.tensor(v)
    for name in op.outputs:
        dtype = out_dtype(name, op, dt, params)
        src = held[name]
        outputs[name] = mem.output(op.shape_of(name, M, N, params), dtype, POISON[dtype][which],
                                   inputs_np[src] if src else None)
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
        if len(op.shape_of(name, M, N)) == 2:
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
        row = v.shape[1] * v.dtype.itemsize
        buf.fill(offset, np.ascontiguousarray(v.block), v.shape[0] * row)
        for r, values in v.rows.items():
            buf.upload(np.ascontiguousarray(values, dtype=v.dtype), offset + r * row)

    def tensor(self, v):
        from verifier.launch.cuda import DeviceArray

        if isinstance(v, _lay.SparseRows):
            buf = self._alloc(v.nbytes)
            self._fill_rows(buf, 0, v)
            return DeviceArray(buf, v.shape)
        a = np.ascontiguousarray(v)
        buf = self._alloc(a.nbytes)
        buf.upload(a)
        return DeviceArray(buf, a.shape)

    def output(self, shape, dtype, poison_bits, middle=None) -> _Buffer:
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

    def _rows_into(self, t, v: _lay.SparseRows) -> None:
        K = len(v.block)
        t[:K] = _dt.from_numpy(np.ascontiguousarray(v.block), self.device)
        done = K
        while done < t.shape[0]:
            step = min(done, t.shape[0] - done)
            t[done:done + step] = t[:step]
            done += step
        for r, values in v.rows.items():
            t[r] = _dt.from_numpy(np.ascontiguousarray(values, dtype=v.dtype), self.device)

    def tensor(self, v):
        if isinstance(v, _lay.SparseRows):
            t = self.torch.empty(v.shape, dtype=_dt.torch_dtype(_dt.canonical(v.dtype)), device=self.device)
            self._rows_into(t, v)
        else:
            t = _dt.from_numpy(np.ascontiguousarray(v), self.device)
        self.keep.append(t)
        return t

    def output(self, shape, dtype, poison_bits, middle=None) -> _Buffer:
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
