"""Timing on a CUDA GPU: CUDA events around each run of the kernel (a CUDA graph replay, or the call behind a
GPU-side delay: verifier.bench.clock), the L2 flushed before every timed run, the host launch timed on its own,
and a device-to-device copy of the same bytes timed in the same run as the yardstick."""
from __future__ import annotations

import datetime
from typing import Callable, Optional

from verifier.bench.plan import BenchResult, Row, bytes_moved, l2_warning, summarize
from verifier.errors import ToolMissing, Unsupported, UsageError
from verifier.ops import OPS

NO_GPU = ("verifier bench needs a CUDA GPU and torch sees none: it times kernels with CUDA events on the device",
          "run it on a machine with a CUDA GPU (`python -c 'import torch; print(torch.cuda.is_available())'` "
          "must print True)")


def gpu_available() -> bool:
    from verifier.gpu.probe import cuda_available

    return cuda_available()


class Timer:
    """Median-of-runs timing of the kernel, not of its launch (verifier.bench.clock holds the rules):

    - the L2 is cold: a scrub buffer several times the L2 is overwritten before each timed run, outside the
      timed region;
    - the host launch is outside the timed region: the call is captured once in a CUDA graph and each run
      replays it (its outputs are poisoned and must be written again by a replay, else the capture missed the
      work and is not used); where capture fails (a callable that synchronizes, launches on another stream) the
      call itself is enqueued behind a GPU-side delay longer than its host launch, so the GPU reaches the start
      event with the kernels already queued;
    - the host time of one call (the launch a user pays when calling it eagerly) is measured on its own; a
      kernel whose launch takes longer than its run on the GPU is host-bound, and the table says so."""

    def __init__(self, runs: int, warmup: int, device=None):
        from verifier.bench import clock

        self.runs, self.warmup = runs, warmup
        self.device = device or clock.TorchDevice()
        self.l2_bytes = self.device.l2_bytes

    def flush(self):
        self.device.flush()

    def time(self, fn: Callable[[], object], written: Callable[[object], list] = lambda ret: []):
        """A clock.Timing of ``fn`` (``written(ret)``: the tensors a call writes, given what it returned)."""
        from verifier.bench import clock

        return clock.measure(self.device, fn, written, self.runs, self.warmup)


def make_inputs(op: str, M: int, N: int, dt, seed: int = 0, params=None):
    """Random normal inputs (never zeros: they can run faster and hide unwritten outputs), outputs poisoned."""
    import torch

    from verifier.dtypes import torch_dtype

    o = OPS[op]
    g = torch.Generator(device="cuda").manual_seed(seed)
    inputs = {}
    for n in o.inputs:
        if o.role(n).kind == "labels":  # integer class indices in [0, N), in the op's default label dtype
            inputs[n] = torch.randint(N, o.shape_of(n, M, N), generator=g, device="cuda",
                                      dtype=torch_dtype(o.input_dtype(n, dt)))
            continue
        t = torch.randn(o.shape_of(n, M, N), generator=g, device="cuda")
        if n in o.vector_inputs:
            t = 1 + 0.1 * t
        inputs[n] = t.to(torch_dtype(o.input_dtype(n, dt)))  # weights in their own dtype (Dtypes.weight)
    outputs = {}
    for n in o.outputs:  # at the kernel's params (an [M, k] output); integer outputs (indices) poisoned with -1
        dtype = torch_dtype(o.output_dtype(n, dt, params))
        outputs[n] = inputs[n] if n in o.inouts else torch.full(
            o.shape_of(n, M, N, params), float("nan") if dtype.is_floating_point else -1, device="cuda", dtype=dtype)
    return inputs, outputs


def declared_outputs(spec, outputs: dict, M: int, N: int) -> dict:
    """``outputs`` the spec declares at a layout of their own (verifier.declare.out_layouts), reallocated so and
    poisoned as make_inputs poisons them: a kernel writing ids rows n_expert apart stays inside its buffer."""
    from verifier.declare.out_layouts import empty_like_declared

    got = {}
    for n in getattr(spec, "output_layout", {}):
        t = outputs[n]
        fill = float("nan") if t.dtype.is_floating_point else -1
        got[n] = empty_like_declared(spec, n, tuple(t.shape), t.dtype, t.device, M, N, spec.op_params(), fill)
    return got


def launcher(spec, inputs, outputs, dt) -> Callable[[], None]:
    """A no-argument function launching ``spec`` once, without synchronizing; the first call is made here,
    through the checked runner (refusals raise Unsupported, launch errors surface): its kind's runner module's
    ``bench_call`` (verifier.launch.bench_call_for)."""
    from verifier.launch import bench_call_for

    return bench_call_for(spec)(spec, inputs, outputs, spec.op_params(), dt)


def copy_buffers(nbytes: int, device: str = "cuda") -> tuple:
    """(src, dst) of the copy baseline moving ``nbytes`` in all (half read, half written): float32, so that the
    clock can poison dst with NaN and see a CUDA-graph replay write it, and the copy is timed from a graph replay as
    the kernels beside it are (a uint8 copy could not be checked, and was timed behind the delay instead: run 5 of
    docs/gpu-runs/2026-12-02-issue-24.md). Rounded down to whole floats (at most 3 bytes of a half)."""
    import torch

    g = torch.Generator(device=device).manual_seed(0)  # its own: a kernel's failed graph capture may leave the
    src = torch.randn(max(nbytes // 2 // 4, 1), dtype=torch.float32, device=device, generator=g)  # default stuck
    return src, torch.empty_like(src)


def _copy_timing(timer: Timer, nbytes: int, cache: dict):
    """The timing of a device-to-device copy moving ``nbytes`` in all (half read, half written), once per size."""
    if nbytes not in cache:
        src, dst = copy_buffers(nbytes)
        cache[nbytes] = timer.time(lambda: dst.copy_(src), lambda ret: [dst])
    return cache[nbytes]


def _copy_ms(timer: Timer, nbytes: int, cache: dict):
    """The copy's median (ms), or None where timing it failed (``cache[nbytes]`` then says why)."""
    try:
        return summarize(_copy_timing(timer, nbytes, cache).times_ms).median_ms
    except Exception as e:  # noqa: BLE001 - the machine's or an earlier kernel's doing: said on the copy's row
        import torch

        cache[nbytes] = _one_line(f"the copy baseline failed: {type(e).__name__}: {e}")
        torch.cuda.synchronize()
        return None


def run_bench(kernels, against, shapes, dtypes, runs: int, warmup: int = 5,
              progress: Optional[Callable[[str], None]] = None) -> BenchResult:
    """Time every kernel (and every ``against`` kernel of the same op) at every shape and dtype, each next to a
    copy of the same bytes. A kernel that refuses a shape or fails is a row saying so; the others still run."""
    if not gpu_available():
        raise ToolMissing(NO_GPU[0], fix=NO_GPU[1])
    import torch

    from verifier.launch import triton as tr
    from verifier.report.environment import environment

    if any(k.uses_triton for k in list(kernels) + list(against)):
        tr.activate("compiled")
    timer = Timer(runs, warmup)
    result = BenchResult(environment=environment(), gpu=torch.cuda.get_device_name(0), l2_bytes=timer.l2_bytes,
                         runs=runs, warmup=warmup,
                         date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    copies: dict = {}
    ops = list(dict.fromkeys(k.op for k in kernels))
    for op in ops:
        mains = [k for k in kernels if k.op == op]
        others = [k for k in against if k.op == op and k.name not in {m.name for m in mains}]
        for dt in dtypes:
            for M, N in shapes:
                nbytes = bytes_moved(op, M, N, dt)
                why = l2_warning(nbytes, timer.l2_bytes)
                if why:
                    result.warnings.append((M, N, dt.tag, why))
                copy_ms, timed = None, False
                for role, group in (("kernel", mains), ("against", others)):
                    for spec in group:
                        if dt not in spec.dtypes:
                            if role == "kernel":
                                continue  # only the dtypes a main kernel declares
                            result.rows.append(Row(spec.name, role, op, dt.tag, M, N, nbytes, status="refused",
                                                   note=f"does not declare {dt.tag}"))
                            continue
                        if progress:
                            progress(f"{spec.name} {dt.tag} {M}x{N}")
                        if copy_ms is None and not isinstance(copies.get(nbytes), str):
                            copy_ms = _copy_ms(timer, nbytes, copies)
                        timed = True
                        result.rows.append(_time_one(timer, spec, role, op, dt, M, N, nbytes, copy_ms))
                copy = copies.get(nbytes)
                if timed and isinstance(copy, str):  # the copy itself failed: its row says why, the kernels' stand
                    result.rows.append(Row("d2d-copy", "copy", op, dt.tag, M, N, nbytes, status="error", note=copy))
                elif copy_ms is not None:
                    result.rows.append(Row("d2d-copy", "copy", op, dt.tag, M, N, nbytes,
                                           stats=summarize(copy.times_ms), copy_ms=copy_ms, host_ms=copy.host_ms,
                                           method=copy.method, note=copy.note))
    return result


def _time_one(timer, spec, role, op, dt, M, N, nbytes, copy_ms) -> Row:
    import torch

    row = Row(spec.name, role, op, dt.tag, M, N, nbytes, copy_ms=copy_ms)
    try:
        inputs, outputs = make_inputs(op, M, N, dt, params=spec.op_params())
        outputs.update(declared_outputs(spec, outputs, M, N))
        for out, src in getattr(spec, "outputs_alias", {}).items():  # written over the input: one tensor
            outputs[out] = inputs[src]
        fn = launcher(spec, inputs, outputs, dt)
        outs = [t for n, t in outputs.items() if n not in OPS[op].inouts]  # poisoning an in-out would change inputs
        timing = timer.time(fn, lambda ret: _tensors(ret) or outs)  # what the call returned, else its outputs
        row.stats, row.host_ms, row.method, row.note = summarize(timing.times_ms), timing.host_ms, timing.method, \
            timing.note
    except Unsupported as e:
        row.status, row.note = "refused", _one_line(e.message)
    except UsageError:
        raise
    except Exception as e:  # the kernel's failure, reported on its row; the other kernels still run
        row.status, row.note = "error", _one_line(f"{type(e).__name__}: {e}")
        torch.cuda.synchronize()
    return row


def _tensors(ret) -> list:
    """The tensors a call returned (a callable may return its outputs instead of writing them)."""
    if isinstance(ret, dict):
        ret = list(ret.values())
    if isinstance(ret, (list, tuple)):
        return [t for r in ret for t in _tensors(r)]
    return [ret] if hasattr(ret, "data_ptr") else []


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:300]
