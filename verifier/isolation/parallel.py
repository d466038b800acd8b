"""Many kernels at once (``verifier check -j N``): each kernel's battery in its own fork (verifier.isolation.forked:
on the CPU, and on a GPU while this process has not initialised CUDA) or spawned child process (``--isolate``, or a
GPU where this process holds CUDA), N at a time, the reports in the order of the specs whatever order they finish in.

What ``-j 1`` gives, ``-j N`` gives: the same reports in the same order, the same findings, the same exit code.
Each kernel is checked by the same function as one after another (verifier.isolation.forked or .children), so
only the order in which they run changes; an exception a kernel's check raises (a UsageError met in a spec)
stops the run as it would at ``-j 1``: kernels after it are not started, and the first one in spec order is
raised once those before it are done.

Scheduling: the slowest kinds start first (Triton kernels, then callables, then CUDA kernels: a Triton check
compiles and imports torch, a CUDA one launches through the driver), so the run does not end on one long kernel
started last. On GPUs, lane k of the N runs its children on GPU k mod G (``CUDA_VISIBLE_DEVICES``, round robin
as the pytest plugin pins its workers: verifier.gpu.pinning); one GPU is left as it is.

Forks are started from this thread only, with no other thread running (a fork copies one thread: a lock
another thread held would stay locked in the child); child processes are waited on by threads.
"""
from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

from verifier.gpu import pinning
from verifier.isolation import forked as _forked
from verifier.isolation.children import check_in_child

# GPU memory one check child may hold at once (a CUDA context, torch's caching allocator, the battery's
# buffers: the largest catalogue inputs are tens of MiB); -j auto starts no more children than fit.
CHILD_GPU_BYTES = 2 << 30
FORK, CHILD, HERE = "fork", "child", "here"  # how a kernel is checked
_ORDER = {"triton": 0, "callable": 1, "cuda": 2}  # slowest first
_POLL_S = 0.02


def default_jobs(device: str, env=None, cpus: Optional[int] = None, physical: Optional[int] = None,
                 free: Optional[dict] = None) -> int:
    """``-j auto``: one kernel per CPU; on GPUs no more than the visible GPUs' free memory holds
    (CHILD_GPU_BYTES a child). The arguments replace what is asked of the machine (tests)."""
    cpus = pinning.usable_cpus() if cpus is None else cpus
    if device != "cuda":
        return max(1, cpus)
    from verifier.gpu import probe

    env = os.environ if env is None else env
    devices = pinning.visible_devices(env, probe.physical_gpu_count() if physical is None else physical)
    free = probe.free_memory_per_gpu() if free is None else free
    known = [free[d] for d in devices if d in free]
    if not known:  # no nvidia-smi answer: the CPUs decide
        return max(1, cpus)
    return max(1, min(cpus, sum(b // CHILD_GPU_BYTES for b in known)))


def lane_vars(lane: int, devices: list) -> dict:
    """What a child of lane ``lane`` sets in its environment: its one GPU of several; nothing for one."""
    return {pinning.VISIBLE: devices[lane % len(devices)]} if len(devices) >= 2 else {}


def lane_env(lane: int, devices: list) -> Optional[dict]:
    """The environment of a spawned child of lane ``lane``: pinned to one of several GPUs; None (inherit) for one."""
    extra = lane_vars(lane, devices)
    return dict(os.environ, **extra) if extra else None


class _Progress:
    """Kernels done and running, to ``progress``: its ``kernels(done, total, running)`` method when it has one
    (the CLI's bar), else one line per change."""

    def __init__(self, progress, total: int):
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, running: list, finished: Optional[str] = None):
        if self.progress is None:
            return
        if hasattr(self.progress, "kernels"):
            self.progress.kernels(self.done, self.total, running, finished)
        else:
            self.progress(f"[{self.done}/{self.total} done] running: {', '.join(running) or '-'}")


def run_parallel(plan: list, opts, jobs: int, progress: Optional[Callable] = None, done: int = 0,
                 total: Optional[int] = None, devices: Optional[list] = None,
                 expected: Optional[dict] = None) -> dict:
    """Check the kernels of ``plan`` — (index, spec, how) with how FORK, CHILD or HERE — ``jobs`` at a time.
    Returns {index: KernelReport}. FORK does not mix with the others (forks need a single-threaded parent); HERE
    kernels run in this process one at a time (a thread of their own), beside the children. ``expected``:
    {index: seconds} (verifier.isolation.durations), the longest started first; without it, the slowest kinds."""
    kinds = {how for _, _, how in plan}
    if FORK in kinds and kinds != {FORK}:
        raise ValueError("run_parallel: forks cannot run beside threads (CHILD / HERE)")
    show = _Progress(progress, total if total is not None else len(plan))
    show.done = done
    devices = devices or []
    if expected:
        queue = deque(sorted(plan, key=lambda p: (-expected.get(p[0], 0.0), p[0])))
    else:
        queue = deque(sorted(plan, key=lambda p: (_ORDER.get(p[1].kind, 3), p[0])))
    reports: dict = {}
    failed: dict = {}  # index -> the exception its check raised
    running: dict = {}  # index -> (spec, handle, lane, started)
    lanes = list(range(jobs - 1, -1, -1))
    children = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="verifier-child") if CHILD in kinds else None
    here = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verifier-here") if HERE in kinds else None

    def start(index, spec, how):
        lane = lanes.pop()
        if how == FORK:
            handle = _forked.start_forked(spec, opts, env=lane_vars(lane, devices))
        elif how == CHILD:
            handle = children.submit(check_in_child, spec, opts, None, None, lane_env(lane, devices))
            handle.verifier_child = True
        else:
            from verifier.battery import check_kernel

            handle = here.submit(check_kernel, spec, opts)
        running[index] = (spec, handle, lane, time.monotonic())

    def finished(index) -> bool:
        spec, handle, lane, t0 = running[index]
        try:
            if isinstance(handle, _forked.ForkJob):
                status = handle.poll()
                if status is None and not handle.expired():
                    return False
                report = handle.timed_out() if status is None else _forked.finish_forked(handle, status)
            else:
                if not handle.done():
                    return False
                report = handle.result()
            if not report.seconds:
                report.seconds = time.monotonic() - t0
            reports[index] = report
        except Exception as e:  # noqa: BLE001 - raised again below, in spec order, as -j 1 would
            failed[index] = e
        del running[index]
        lanes.append(lane)
        return True

    names = {index: spec.name for index, spec, _ in plan}
    ended: list = []
    try:
        while queue or running:
            started = False
            while queue and len(running) < jobs:
                index, spec, how = queue.popleft()
                if failed and index > min(failed):
                    continue  # -j 1 stops at the first kernel whose check raised: it never gets here
                start(index, spec, how)
                started = True
            if started or ended:
                show([names[i] for i in sorted(running)], ", ".join(names[i] for i in ended))
            ended = [i for i in sorted(running) if finished(i)]
            show.done += len(ended)
            if not ended:
                time.sleep(_POLL_S)
        if ended:
            show([], ", ".join(names[i] for i in ended))
    except BaseException:
        _stop(running)
        for pool in (children, here):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        raise
    for pool in (children, here):
        if pool is not None:
            pool.shutdown(wait=True)
    if failed:
        raise failed[min(failed)]
    return reports


def _stop(running: dict) -> None:
    """Interrupted: kill every fork and child still running (children are in their own sessions, so a terminal's
    Ctrl-C does not reach them) and reap the forks; a thread may start its child after a kill, so kill until
    every child's thread is done (an in-process check is left to its thread)."""
    from verifier.toolchain import proc

    futures = []
    for _spec, handle, _lane, _t0 in running.values():
        if isinstance(handle, _forked.ForkJob):
            handle.kill()
            handle.reap()
            handle.tmp.cleanup()
        elif getattr(handle, "verifier_child", False):
            futures.append(handle)
    deadline = time.monotonic() + 10
    while True:
        proc.kill_all()
        if all(f.done() for f in futures) or time.monotonic() > deadline:
            break
        time.sleep(_POLL_S)
