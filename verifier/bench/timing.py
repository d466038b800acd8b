"""Timing on a CUDA GPU: CUDA events around each launch, the L2 flushed before every timed launch, and a
device-to-device copy of the same bytes timed in the same run as the yardstick."""
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
    """Median-of-runs timing with a cold L2: a scrub buffer several times the L2 is overwritten before each
    timed launch, outside the timed region; the GPU is still busy with it while the host enqueues the launch,
    so host-side launch cost is not timed."""

    def __init__(self, runs: int, warmup: int):
        import torch

        self.runs, self.warmup = runs, warmup
        self.l2_bytes = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0))
        self.scrub = torch.empty(max(4 * self.l2_bytes, 256 << 20), dtype=torch.uint8, device="cuda")

    def flush(self):
        self.scrub.fill_(1)

    def time(self, fn: Callable[[], None]) -> list:
        import torch

        for _ in range(self.warmup):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.runs)]
        for s, e in zip(starts, ends):
            self.flush()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def make_inputs(op: str, M: int, N: int, dt, seed: int = 0):
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
    for n in o.outputs:
        outputs[n] = inputs[n] if n in o.inouts else torch.full(o.shape_of(n, M, N), float("nan"), device="cuda",
                                                                 dtype=torch_dtype(dt.output))
    return inputs, outputs


def launcher(spec, inputs, outputs, dt) -> Callable[[], None]:
    """A no-argument function launching ``spec`` once, without synchronizing; the first call is made here,
    through the checked runner (refusals raise Unsupported, launch errors surface). A CUDA kernel goes through
    the one CUDA runner on the tensors' device addresses and torch's current stream, where the events are."""
    params = spec.op_params()
    if spec.kind == "cuda":
        from verifier.launch import cuda as cu

        prepared = cu.prepare(spec, inputs, outputs, params, dt)  # its workspaces live as long as the lambda
        cu.launch(prepared, sync=True)
        return lambda: cu.launch(prepared, sync=False)
    if spec.kind == "triton":
        from verifier.launch import triton as tr

        tr.run_triton(spec, inputs, outputs, params, dt, "cuda", mode="compiled")
        fn = getattr(tr.load_module(spec, "compiled"), spec.launcher)
        return lambda: fn(inputs, outputs, params, dt)
    from verifier.launch.callable import run_callable

    run_callable(spec, inputs, outputs, params, dt, "cuda")  # raises Unsupported for a CPU-only callable
    # Timed as the user calls it: a returned tensor is not copied into the outputs.
    return lambda: spec.fn(inputs, outputs, params, dt)


def _copy_stats(timer: Timer, nbytes: int, cache: dict):
    """Times of a device-to-device copy moving ``nbytes`` in all (half read, half written), once per size."""
    import torch

    if nbytes not in cache:
        half = max(nbytes // 2, 1)
        src = torch.randint(0, 255, (half,), dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        cache[nbytes] = summarize(timer.time(lambda: dst.copy_(src)))
    return cache[nbytes]


def run_bench(kernels, against, shapes, dtypes, runs: int, warmup: int = 5,
              progress: Optional[Callable[[str], None]] = None) -> BenchResult:
    """Time every kernel (and every ``against`` kernel of the same op) at every shape and dtype, each next to a
    copy of the same bytes. A kernel that refuses a shape or fails is a row saying so; the others still run."""
    if not gpu_available():
        raise ToolMissing(NO_GPU[0], fix=NO_GPU[1])
    import torch

    from verifier.launch import triton as tr
    from verifier.report.environment import environment

    if any(k.kind == "triton" for k in list(kernels) + list(against)):
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
                copy_ms = None
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
                        if copy_ms is None:
                            copy_ms = _copy_stats(timer, nbytes, copies).median_ms
                        result.rows.append(_time_one(timer, spec, role, op, dt, M, N, nbytes, copy_ms))
                if copy_ms is not None:
                    result.rows.append(Row("d2d-copy", "copy", op, dt.tag, M, N, nbytes,
                                           stats=copies[nbytes], copy_ms=copy_ms))
    return result


def _time_one(timer, spec, role, op, dt, M, N, nbytes, copy_ms) -> Row:
    import torch

    row = Row(spec.name, role, op, dt.tag, M, N, nbytes, copy_ms=copy_ms)
    try:
        inputs, outputs = make_inputs(op, M, N, dt)
        for out, src in getattr(spec, "outputs_alias", {}).items():  # written over the input: one tensor
            outputs[out] = inputs[src]
        fn = launcher(spec, inputs, outputs, dt)
        row.stats = summarize(timer.time(fn))
    except Unsupported as e:
        row.status, row.note = "refused", _one_line(e.message)
    except UsageError:
        raise
    except Exception as e:  # the kernel's failure, reported on its row; the other kernels still run
        row.status, row.note = "error", _one_line(f"{type(e).__name__}: {e}")
        torch.cuda.synchronize()
    return row


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:300]
