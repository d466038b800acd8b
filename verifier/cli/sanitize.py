"""``verifier sanitize PATH...``: compute-sanitizer on the kernels of spec files, as a report.

Exit codes as ``verifier check``: 0 nothing found, 1 findings, 2 usage error, 3 internal error, 4 nothing
was sanitized. On a machine without a GPU (or without compute-sanitizer) every cell is ``skipped(<why>)``,
the exit code is 4 and stderr says that nothing was sanitized and why (the missing tool and its fix): a
CPU runner's job must treat 4 as "not run here", never as clean.
"""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, wait

from verifier.cli import preflight
from verifier.cli.args import add_selection_args
from verifier.errors import UsageError

_TIMEOUT_FIX = "pass seconds per tool run, e.g. --timeout 300"


def add_subparser(subparsers) -> None:
    from verifier.sanitizer.runs import DEFAULT_TIMEOUT_S, TOOLS

    s = subparsers.add_parser(
        "sanitize", help="run compute-sanitizer (racecheck, memcheck, synccheck, initcheck) on kernels",
        description="Run compute-sanitizer tools on CUDA and Triton kernels at small tail shapes; findings come "
                    "from its XML records. Suppressions: sanitizer-suppressions.toml at the repository root.")
    add_selection_args(s)
    s.add_argument("--tool", action="append", metavar="TOOL", help=f"{' | '.join(TOOLS)} (repeatable; default all four)")
    s.add_argument("--dtype", metavar="TAG", help="only this dtype variant (default: every declared one)")
    from verifier.report import FORMATS

    s.add_argument("--format", default="text", help=f"{' | '.join(FORMATS)} (default text)")
    s.add_argument("--output", metavar="FILE", help="write the report here, not stdout")
    s.add_argument("--timeout", default=str(DEFAULT_TIMEOUT_S), metavar="S",
                   help=f"seconds per tool run before it is killed (default {DEFAULT_TIMEOUT_S:g})")
    s.add_argument("--jobs", "-j", default="1", metavar="N",
                   help="tool runs at once (each is its own process; 'auto' = the CPU count). With several GPUs "
                        "the runs are spread over them, round robin (default 1)")
    s.add_argument("--keep-xml", metavar="DIR", help="keep each run's XML and log as DIR/<kernel>.<dtype>.<tool>.xml")
    s.add_argument("--suppressions", metavar="FILE",
                   help="suppressions file (default: the nearest sanitizer-suppressions.toml above each spec file)")


def _validate(args) -> tuple:
    from verifier.report import FORMATS
    from verifier.sanitizer.runs import TOOLS

    if args.format not in FORMATS:
        raise UsageError(f"--format {args.format!r} is not a format", fix=f"use one of {', '.join(FORMATS)}")
    tools = tuple(dict.fromkeys(args.tool or TOOLS))
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        raise UsageError(f"--tool {bad[0]!r} is not a compute-sanitizer tool", fix=f"use one of {', '.join(TOOLS)}")
    try:
        timeout = float(args.timeout)
    except ValueError:
        raise UsageError(f"--timeout {args.timeout!r} is not a number", fix=_TIMEOUT_FIX) from None
    if not timeout > 0:
        raise UsageError(f"--timeout {args.timeout!r} must be positive", fix=_TIMEOUT_FIX)
    if args.jobs == "auto":
        jobs = os.cpu_count() or 1
    else:
        try:
            jobs = int(args.jobs)
        except ValueError:
            jobs = 0
        if jobs < 1:
            raise UsageError(f"--jobs {args.jobs!r} is not a positive whole number",
                             fix="pass e.g. --jobs 8, or --jobs auto for one run per CPU")
    return tools, timeout, jobs


def _paths(paths):
    if paths:
        return paths
    if os.path.isdir("kernels"):
        return ["kernels"]
    raise UsageError("no PATH given and no kernels/ directory here", fix="verifier sanitize PATH...")


def run(args) -> int:
    from verifier.declare import registry
    from verifier.gpu.probe import resolve_device
    from verifier.report import render
    from verifier.report.environment import environment
    from verifier.results.kernel import KernelReport
    from verifier.results.run import Result
    from verifier.sanitizer import suppressions as _supp
    from verifier.sanitizer.runs import finish_kernel, start_kernel
    from verifier.toolchain.proc import kill_all

    tools, timeout, jobs = _validate(args)
    preflight.output_file(args.output)
    preflight.output_dir(args.keep_xml, "--keep-xml")
    specs = registry.load(_paths(args.paths), args.kernel)
    preflight.build_cache(specs)
    entries = _supp.load(args.suppressions) if args.suppressions else None
    device = resolve_device("auto")
    preflight.triton_cache(specs, device)
    gpus = _gpus() if device == "cuda" and jobs > 1 else None
    progress = lambda m: sys.stderr.write(f"verifier sanitize: {m}\n")
    plan = []
    for spec in specs:
        dts = [d for d in spec.dtypes if args.dtype in (None, d.tag)]
        if not dts:
            raise UsageError(f"kernel {spec.name} declares no dtype {args.dtype!r}",
                             fix=f"declared: {', '.join(d.tag for d in spec.dtypes)}")
        plan.append((spec, dts))
    reports = []
    t0 = time.monotonic()
    # Threads only wait on compute-sanitizer processes; every kernel's runs are queued before any is
    # recorded, so the pool stays full across kernels.
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="sanitize")
    pending = []
    try:
        for spec, dts in plan:
            report = KernelReport(spec=spec, device=device)
            pending.append(start_kernel(spec, report, dts, tools, device=device, timeout=timeout,
                                        keep_dir=args.keep_xml, suppressions=entries, progress=progress,
                                        pool=pool if jobs > 1 else None, gpus=gpus))
            reports.append(report)
        for p, report in zip(pending, reports):
            # a kernel's time is its tool runs' time (they overlap with other kernels' under --jobs)
            report.seconds = finish_kernel(p)
    except KeyboardInterrupt:
        # The runs are in their own sessions (Ctrl-C does not reach them): drop the queued ones and kill the
        # running ones until every run has ended (a thread may start one between the two).
        pool.shutdown(wait=False, cancel_futures=True)
        runs = [f for p in pending if p for _, _, f in p.runs]
        while not all(f.done() for f in runs):
            kill_all()
            wait(runs, timeout=0.2)
        raise
    finally:
        pool.shutdown(wait=True)
    wall = time.monotonic() - t0
    result = Result(reports=reports, environment=environment(),
                    options={"command": "sanitize", "tools": list(tools), "device": device, "timeout": timeout,
                             "jobs": jobs, "gpus": gpus or [], "wall_seconds": round(wall, 1)})
    text = render(result, args.format)
    from verifier.report import write

    write(text, args.output)
    sys.stderr.write(summary_line(result) + "\n")
    return result.exit_code()


def _gpus():
    """The GPUs runs may be spread over (None for one or none)."""
    from verifier.gpu import pinning as gpu_pinning
    from verifier.gpu.probe import physical_gpu_count

    devices = gpu_pinning.visible_devices(os.environ, physical_gpu_count())
    return devices if len(devices) > 1 else None


def summary_line(result) -> str:
    ran = sum(1 for r in result.reports for v in r.cells.values() if not v.skipped)
    if not ran:
        reasons = sorted({v.reason for r in result.reports for v in r.cells.values()})
        return ("verifier sanitize: nothing was sanitized (every run skipped: " + "; ".join(reasons) + ")"
                + f"; exit {result.exit_code()}")
    s = result.summary()
    return (f"verifier sanitize: {s['kernels']} kernels, {ran} tool runs, {s['pass']} pass, {s['fail']} fail, "
            f"{s['error']} error, {s['skipped']} skipped, {s['findings']} findings")
