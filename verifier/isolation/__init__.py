"""Checking many kernels, each where one kernel's failure costs only its own report: ``check_all``.

A kernel's battery (verifier.battery.check_kernel) runs in this process, in a fork of it (verifier.isolation.forked,
CPU) or in a child process (verifier.isolation.children, GPU: an illegal address poisons the CUDA context and a
hung kernel never returns). Children answer through one protocol (verifier.isolation.children) and are killed
on timeout as a process group.
"""
from __future__ import annotations

from typing import Optional

from verifier.battery import check_kernel
from verifier.declare.usercode import UserCodeError
from verifier.errors import SpecError, UsageError
from verifier.inputs.cases import find_case
from verifier.isolation import forked as _forked
from verifier.isolation.children import check_in_child
from verifier.launch import runnable_reason
from verifier.launch.triton import activate
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
    return opts.device == "cuda" and not (spec.kind == "callable" and spec.device == "cpu")


def check_all(specs, opts: Options, progress=None, isolate: Optional[bool] = None) -> list[KernelReport]:
    """Run the battery on every kernel and go on after each, whatever it did.

    ``isolate``: run each kernel in a child process (verifier.isolation.children), so a fault is a **crash** finding
    and a hang a **timeout** finding (after ``opts.timeout`` s); None means: on a GPU, yes; on the CPU,
    callables and Triton kernels are checked in a fork of this process (verifier.isolation.forked: a kernel that kills
    its process is a crash finding); False: everything in this process.
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
    triton = next((s for s in in_process if s.kind == "triton"), None)
    if triton is not None and runnable_reason(triton, opts.device) is None:
        activate(opts.triton_mode or ("compiled" if opts.device == "cuda" else "interpreter"))
    reports = []
    for i, spec in enumerate(specs):
        if progress:
            progress(f"[{i + 1}/{len(specs)}] {spec.name}")
        if unselected[spec.name]:
            r = KernelReport(spec=spec, device=opts.device)
            for check in ("build", "resources") + RUN_CHECKS:
                r.mark("*", check, skipped(f"not selected: {unselected[spec.name]}"))
            reports.append(r)
        elif _use_child(spec, opts, isolate):
            reports.append(check_in_child(spec, opts, progress))
        elif isolate is None and spec.kind in ("callable", "triton") and _forked.available(opts.device):
            # A kernel that kills its process (segfault, os._exit) costs only its own report.
            reports.append(_forked.check_forked(spec, opts, progress))
        else:
            reports.append(check_kernel(spec, opts, progress))
    return reports


__all__ = ["check_all"]
