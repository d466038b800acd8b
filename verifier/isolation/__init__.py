"""Checking many kernels, each where one kernel's failure costs only its own report: ``check_all``.

A kernel's battery (verifier.battery.check_kernel) runs in this process, in a fork of it (verifier.isolation.forked)
or in a fresh child process (verifier.isolation.children). On a GPU every kernel that may launch device code runs
apart from this process (an illegal address poisons the CUDA context; a hung kernel never returns): in a fork while
this process has not initialised CUDA (milliseconds: torch, Triton and the spec files are already loaded), else, or
with ``--isolate``, in a fresh interpreter (seconds). Several at once: verifier.isolation.parallel, ``-j N``.
Children answer through one protocol (verifier.isolation.children) and are killed on timeout as a process group;
one that dies or is killed keeps the findings of the steps it completed (verifier.isolation.journal).
"""
from __future__ import annotations

import os
import sys
from typing import Optional

from verifier.battery import check_kernel
from verifier.declare.usercode import UserCodeError
from verifier.errors import SpecError, UsageError
from verifier.inputs.cases import find_case
from verifier.isolation import forked as _forked
from verifier.isolation import durations, parallel
from verifier.isolation.children import check_in_child
from verifier.launch import runnable_reason
from verifier.launch.triton import activate, interpreter_if_installed
from verifier.results.kernel import RUN_CHECKS, KernelReport, skipped
from verifier.results.options import PSEUDO_CASES, Options


def _not_selected(spec, opts) -> Optional[str]:
    """Why --dtype / --case leave nothing of this kernel to check (None: something is left)."""
    if opts.dtype is not None and all(d.tag != opts.dtype for d in spec.dtypes):
        return f"declares no dtype {opts.dtype}"
    if opts.case is None or opts.case in PSEUDO_CASES:
        return None
    if all(find_case(spec, dt, opts.case, opts.level) is None for dt in spec.dtypes):
        return f"op {spec.op} has no case {opts.case}"
    return None


def _selection(spec, opts) -> Optional[str]:
    """_not_selected, with a spec whose supports() raises counted as selected: its battery reports the error."""
    try:
        return _not_selected(spec, opts)
    except (UserCodeError, SpecError):  # a supports() that raises or returns a bool: its battery says so
        return None


def _use_child(spec, opts, isolate: Optional[bool]) -> bool:
    if isolate is not None:
        return isolate
    # Automatic: on a GPU, everything that may launch device code; CPU-only callables stay in-process.
    return opts.device == "cuda" and spec.runs_on_gpu(opts.device)


def _how(spec, opts, isolate: Optional[bool]) -> str:
    """How one kernel is checked at -j 1: in a child process, a fork or this process."""
    if _use_child(spec, opts, isolate):
        # --isolate asks for a fresh process; else a fork of this one where it can still use CUDA.
        return parallel.FORK if isolate is None and _forked.available(opts.device) else parallel.CHILD
    if isolate is None and spec.imports_torch:
        # A kernel that kills its process (segfault, os._exit) or hangs costs only its own report: a fork, or a
        # fresh process where this one cannot fork (it holds CUDA), both killed at the kernel's timeout.
        return parallel.FORK if _forked.available(opts.device) else parallel.CHILD
    return parallel.HERE  # CUDA kernels on the CPU (build, resources, lint: no launch), or isolate=False
    # (verifier.launch.watchdog stops a kernel call at the timeout in this process)


def _parallel_how(how: str, opts, isolate: Optional[bool], plan_has_child: bool) -> str:
    """How one kernel is checked at -j N > 1: what runs in this process at -j 1 runs in a fork on the CPU (a
    CUDA kernel's build and resources), or in a child where there is no fork; a CPU-only callable beside GPU
    children stays here (its own thread)."""
    if how != parallel.HERE or isolate is False:
        return how
    if plan_has_child:
        return parallel.HERE
    return parallel.FORK if _forked.available(opts.device) else parallel.CHILD


def _preload(specs) -> None:
    """Import here, once, what every forked GPU child would import on its own (seconds each on the H200: torch
    alone 4-5 s): torch and Triton where a Triton kernel or a callable is checked, the references' modules, and
    Triton's cache key of its own sources (it hashes them once a process). None of it initialises CUDA (checked
    after: a fork of a process that has could not use it, and the children are then spawned instead)."""
    import importlib

    names = ["references", "mpmath"]
    if any(s.imports_torch for s in specs):
        names[:0] = ["torch", "torch.nn.functional"]
    if any(s.uses_triton for s in specs):
        names += ["triton", "triton.language"]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a child that needs it says so in its own report
            continue
    if "triton" in sys.modules:
        try:
            from triton.runtime.cache import triton_key  # a private name: its absence costs only the speed-up

            triton_key()
        except Exception:  # noqa: BLE001
            pass


def _unselected_report(spec, opts, why: str) -> KernelReport:
    r = KernelReport(spec=spec, device=opts.device)
    for check in ("build", "resources") + RUN_CHECKS:
        r.mark("*", check, skipped(f"not selected: {why}"))
    return r


def check_all(specs, opts: Options, progress=None, isolate: Optional[bool] = None,
              jobs: Optional[int] = 1) -> list[KernelReport]:
    """Run the battery on every kernel and go on after each, whatever it did.

    ``isolate``: run each kernel in a child process (verifier.isolation.children), so a fault is a **crash** finding
    and a hang a **timeout** finding (after ``opts.kernel_timeout`` s); None means: on a GPU, yes; on the CPU,
    callables and Triton kernels are checked in a fork of this process (verifier.isolation.forked: a kernel that kills
    its process is a crash finding, one that hangs is killed at its timeout); False: everything in this process,
    a kernel call past the timeout interrupted there (verifier.launch.watchdog: Python code only).
    ``jobs``: kernels checked at once, each in its own fork or child (verifier.isolation.parallel); None: one per
    CPU, capped by the GPUs' free memory. The reports, their order and the exit code are those of ``jobs=1``.
    --dtype / --case select what exists: kernels without it are reported skipped; if no kernel has it,
    that is a usage error."""
    unselected = {s.name: _selection(s, opts) for s in specs}
    if specs and all(unselected.values()):
        what = f"dtype {opts.dtype}" if opts.dtype and all("dtype" in r for r in unselected.values()) \
            else f"case {opts.case}"
        raise UsageError(f"no selected kernel has {what}",
                         fix="take --dtype / --case from a finding's repro line, or see `verifier list` / "
                             "`verifier cases OP`")
    in_process = [s for s in specs if not unselected[s.name] and not _use_child(s, opts, isolate)]
    triton = next((s for s in in_process if s.uses_triton), None)
    if triton is not None and runnable_reason(triton, opts.device) is None:
        activate(opts.triton_mode or ("compiled" if opts.device == "cuda" else "interpreter"))
    elif opts.device == "cpu" and opts.triton_mode in (None, "interpreter") and any(
            s.may_launch_triton for s in in_process):
        interpreter_if_installed()  # a callable's own Triton kernels (a library function's) run there, not fail
    hows = {i: _how(s, opts, isolate) for i, s in enumerate(specs) if not unselected[s.name]}
    if opts.device == "cuda" and parallel.FORK in hows.values():
        _preload([specs[i] for i, h in hows.items() if h == parallel.FORK])
        if not _forked.available(opts.device):  # an import initialised CUDA: fresh processes instead of forks
            hows = {i: parallel.CHILD if h == parallel.FORK else h for i, h in hows.items()}
    n = jobs if jobs is not None else parallel.default_jobs(opts.device)
    if n > 1 and len(hows) > 1 and isolate is not False:
        return _check_parallel(specs, opts, progress, isolate, n, hows, unselected)
    reports = []
    for i, spec in enumerate(specs):
        if progress:
            progress(f"[{i + 1}/{len(specs)}] {spec.name}")
        if unselected[spec.name]:
            reports.append(_unselected_report(spec, opts, unselected[spec.name]))
        elif hows[i] == parallel.CHILD:
            reports.append(check_in_child(spec, opts, progress))
        elif hows[i] == parallel.FORK and _forked.available(opts.device):
            reports.append(_forked.check_forked(spec, opts, progress, alone=len(hows) == 1))
        elif hows[i] == parallel.FORK:  # this process initialised CUDA since (a spec's code): a fresh one now
            reports.append(check_in_child(spec, opts, progress))
        else:
            reports.append(check_kernel(spec, opts, progress))
    return reports


def _check_parallel(specs, opts, progress, isolate, jobs, hows, unselected) -> list[KernelReport]:
    has_child = parallel.CHILD in hows.values()
    plan = [(i, specs[i], _parallel_how(h, opts, isolate, has_child)) for i, h in hows.items()]
    devices = []
    if opts.device == "cuda":
        from verifier.gpu import pinning
        from verifier.gpu.probe import physical_gpu_count

        devices = pinning.visible_devices(os.environ, physical_gpu_count())
    done = {i: _unselected_report(s, opts, unselected[s.name]) for i, s in enumerate(specs) if unselected[s.name]}
    guess = dict(zip((i for i, _, _ in plan), durations.expected([s for _, s, _ in plan], opts)))
    ran = parallel.run_parallel(plan, opts, min(jobs, len(plan)), progress, done=len(done), total=len(specs),
                                devices=devices, expected=guess)
    durations.record([(specs[i], r.seconds) for i, r in ran.items()], opts)
    done.update(ran)
    return [done[i] for i in range(len(specs))]


__all__ = ["check_all"]
