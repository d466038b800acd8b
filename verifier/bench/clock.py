"""What a timed run holds: the kernel on the GPU, not its host launch.

CUDA events measure GPU time between two points of a stream. If the host is still launching (Python, a
library's argument handling, ``cuLaunchKernel``) when the GPU reaches the start event, the GPU idles until the
kernel arrives and the idle time is timed. Liger-Kernel's RMSNorm read 131.5 µs in one run and 37.1 µs in
another on the same H200 (issue #24): its launch is longer than its kernel. So a timed run is either

- a **CUDA graph replay** of the call, captured once: one cheap launch for all the call's kernels; a capture is
  used only if replaying it writes the call's outputs again (they are poisoned with NaN first), so a call whose
  work escaped the capture (launched on another stream, done on the host) is never timed as an empty graph; or
- the call itself, **behind a GPU-side delay** (a spin kernel) longer than the call's host time, so the kernels
  are queued before the start event fires — where the call cannot be captured (it synchronizes, say).

Either way the delay precedes the start event (a graph's replay has a host launch too). The host time of one
eager call is measured on its own, behind a long delay so that it never waits for the GPU; a kernel whose host
time is longer than its GPU time is **host-bound** (verifier.bench.plan.Row.host_bound): called eagerly it
runs at the speed of its launch.

The decisions are pure functions of measured numbers; the GPU is reached through a device object
(``TorchDevice``), which tests replace with a simulated timeline (tests/test_bench_clock.py).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

HOST_PROBES = 7  # eager calls whose host time is measured
HOST_PROBE_DELAY_US = 50_000.0  # the GPU is held this long while they are timed: none of them waits for it
MIN_DELAY_US = 50.0
DELAY_MARGIN = 3.0  # the delay is this many times the call's slowest measured host time, plus MIN_DELAY_US
MAX_DELAY_US = 200_000.0  # a call slower than this on the host is timed behind this delay, and says so
GRAPH = "graph"
DELAY = "delay"


@dataclass(frozen=True)
class Timing:
    times_ms: list  # GPU time of each timed run
    host_ms: float  # median host time of one eager call
    method: str  # GRAPH or DELAY
    note: str = ""  # why not a graph; a launch the delay could not cover


def delay_us(host_s: list) -> float:
    """The GPU-side delay before each timed run: longer than the slowest measured host time of what is launched
    inside the timed region, with margin, within MAX_DELAY_US."""
    worst = max(host_s) * 1e6 if host_s else 0.0
    return min(MAX_DELAY_US, DELAY_MARGIN * worst + MIN_DELAY_US)


def host_times(device, fn: Callable, n: int = HOST_PROBES) -> list:
    """Host seconds of ``n`` calls of ``fn``, made while the GPU is held by a long delay (so none waits)."""
    device.sleep_us(HOST_PROBE_DELAY_US)
    out = []
    for _ in range(n):
        t0 = device.now()
        fn()
        out.append(device.now() - t0)
    device.synchronize()
    return out


def timed_runs(device, call: Callable, runs: int, wait_us: float) -> list:
    """GPU milliseconds of ``runs`` runs of ``call``: before each, the L2 scrub and the delay, then the start
    event, the call, the end event. The host enqueues all of it while the GPU spins in the delay."""
    pairs = [(device.event(), device.event()) for _ in range(runs)]
    for start, end in pairs:
        device.flush()
        device.sleep_us(wait_us)
        start.record()
        call()
        end.record()
    device.synchronize()
    return [start.elapsed_time(end) for start, end in pairs]


def capture(device, fn: Callable, written: Callable) -> tuple:
    """(replay, None) when a CUDA graph of ``fn`` replays its work, else (None, why not)."""
    try:
        replay, ret = device.capture(fn)
    except Exception as e:  # noqa: BLE001 - any capture failure means: time the call itself
        return None, f"not captured in a CUDA graph ({type(e).__name__}: {_short(e)})"
    targets = written(ret)
    if not targets:
        return None, "not captured in a CUDA graph (the call writes no tensor a replay could be checked on)"
    device.poison(targets)
    replay()
    device.synchronize()
    if not device.all_written(targets):
        return None, "not captured in a CUDA graph (a replay left its outputs unwritten: the work escaped the capture)"
    return replay, None


def measure(device, fn: Callable, written: Callable, runs: int, warmup: int) -> Timing:
    """Time ``runs`` runs of the call: a graph replay or the call behind a delay, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    device.synchronize()
    eager = host_times(device, fn)
    replay, why = capture(device, fn, written)
    call = replay if replay is not None else fn
    launched = host_times(device, replay) if replay is not None else eager
    wait = delay_us(launched)
    note = why or ""
    if max(launched) * 1e6 > MAX_DELAY_US:
        note = (note + "; " if note else "") + f"host launch {max(launched) * 1e3:.1f} ms is longer than the " \
                                                f"{MAX_DELAY_US / 1e3:.0f} ms delay: the timed runs include part of it"
    times = timed_runs(device, call, runs, wait)
    return Timing(times, statistics.median(eager) * 1e3, GRAPH if replay is not None else DELAY, note)


def _short(e) -> str:
    return " ".join(str(e).split())[:160]


class TorchDevice:
    """The GPU through torch: events, the L2 scrub, ``torch.cuda._sleep`` as the delay (its clock cycles
    calibrated once against events), CUDA graphs."""

    def __init__(self):
        import torch

        self.torch = torch
        self.l2_bytes = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0))
        self.scrub = torch.empty(max(4 * self.l2_bytes, 256 << 20), dtype=torch.uint8, device="cuda")
        self._cycles_per_us = None

    def flush(self):
        self.scrub.fill_(1)

    @staticmethod
    def now() -> float:
        return time.perf_counter()

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)  # record(); elapsed_time(end) in ms

    def synchronize(self):
        self.torch.cuda.synchronize()

    def cycles_per_us(self) -> float:
        if self._cycles_per_us is None:
            torch, rates = self.torch, []
            for _ in range(3):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.cuda._sleep(1_000_000)
                e.record()
                e.synchronize()
                rates.append(1_000_000 / (s.elapsed_time(e) * 1e3))
            self._cycles_per_us = max(rates)  # the fastest clock seen: a delay is never shorter than asked
        return self._cycles_per_us

    def sleep_us(self, us: float):
        self.torch.cuda._sleep(max(1, int(us * self.cycles_per_us())))

    def capture(self, fn):
        torch = self.torch
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # a graph captures on a stream other than the default one
            fn()  # once more on the side stream: lazy initializations happen outside the capture
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        kept = _generator_states(torch)
        try:
            with torch.cuda.graph(graph):
                ret = fn()
        except Exception:
            # A capture that failed (a call that synchronizes) leaves torch's default CUDA generators in capture
            # mode: every later draw from them raised "Offset increment outside graph capture encountered
            # unexpectedly" (Liger's cross entropy, then the copy baseline's input, H200 2026-12-05).
            _restore_generators(kept)
            raise
        torch.cuda.synchronize()
        return graph.replay, ret  # the bound method keeps the graph (and its memory pool) alive

    def poison(self, tensors):
        for t in tensors:
            if t.is_floating_point():
                t.fill_(float("nan"))

    def all_written(self, tensors) -> bool:
        floats = [t for t in tensors if t.is_floating_point()]
        return bool(floats) and all(not bool(self.torch.isnan(t).all()) for t in floats)


def _generator_states(torch) -> list:
    """(generator, a copy of its state) for torch's default CUDA generators, where this torch can copy them."""
    kept = []
    for g in getattr(torch.cuda, "default_generators", ()):
        try:
            kept.append((g, g.clone_state()))
        except (AttributeError, RuntimeError):
            continue
    return kept


def _restore_generators(kept: list) -> None:
    """Each generator back on its copied state (not capturing): graphsafe_set_state swaps the state in."""
    for g, state in kept:
        try:
            g.graphsafe_set_state(state)
        except (AttributeError, RuntimeError):
            continue
