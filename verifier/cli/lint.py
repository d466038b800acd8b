"""``verifier lint PATH...``: the static race and barrier checks on the PTX of every CUDA kernel declared in
spec files, as a report (formats and exit codes as ``verifier check``: 0 clean, 1 findings, 2 usage error,
3 internal error, 4 nothing was checked: no CUDA kernel selected, or nvcc missing). Needs nvcc, no GPU. Kernels
that are not CUDA sources are left out and counted on stderr.
"""
from __future__ import annotations

import os
import sys
import time

from verifier.cli import preflight
from verifier.cli.args import add_selection_args
from verifier.constants import EXIT_NOTHING_CHECKED
from verifier.errors import SpecError, UsageError


def add_subparser(subparsers) -> None:
    s = subparsers.add_parser(
        "lint", help="static race/barrier checks on the PTX of CUDA kernels (no GPU needed)",
        description="Compile each CUDA kernel's source to PTX with the local nvcc and check every entry its "
                    "launches use for: barriers under thread-dependent conditions, shared-memory accesses of "
                    "two threads with no barrier between them, warp collectives whose mask names inactive "
                    "lanes, plain global stores every block makes to the same address, and global addresses "
                    "whose row offset is a 32-bit product that wraps at a large shape the spec accepts.")
    add_selection_args(s)
    s.add_argument("--dtype", metavar="TAG", help="only this dtype variant (default: every declared one)")
    s.add_argument("--arch", action="append", metavar="SM",
                   help="architecture to compile for (repeatable; default: the build check's sm_80 and sm_90)")
    s.add_argument("--format", default="text", help="text | json | markdown | sarif | junit (default text)")
    s.add_argument("--output", metavar="FILE", help="write the report here, not stdout")
    s.add_argument("--jobs", "-j", default="auto", metavar="N",
                   help="analyse entries in N processes (default 'auto': one per CPU)")
    s.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def run(args) -> int:
    from verifier.declare import registry
    from verifier.gpu.probe import CPU_BUILD_ARCHES
    from verifier.declare import usercode
    from verifier.declare.usercode import UserCodeError
    from verifier.lint.step import lint_repro, lint_spec, prefetch
    from verifier.report import FORMATS, render, write
    from verifier.results.kernel import KernelReport
    from verifier.results.run import Result

    if args.format not in FORMATS:
        raise UsageError(f"--format {args.format!r} is not a format", fix=f"use one of {', '.join(FORMATS)}")
    preflight.output_file(args.output)
    jobs = os.cpu_count() or 1 if args.jobs == "auto" else (int(args.jobs) if args.jobs.isdigit() else 0)
    if jobs < 1:
        raise UsageError(f"--jobs {args.jobs!r} is not a positive whole number", fix="e.g. --jobs 2, or --jobs auto")
    arches = tuple(dict.fromkeys(args.arch or CPU_BUILD_ARCHES))
    paths = args.paths or (["kernels"] if os.path.isdir("kernels") else None)
    if not paths:
        raise UsageError("no PATH given and no kernels/ directory here", fix="verifier lint PATH...")
    specs = registry.load(paths, args.kernel)
    cuda = [s for s in specs if s.builds_source]
    preflight.build_cache(cuda)
    t0 = time.monotonic()
    selected = [(s, [d for d in s.dtypes if args.dtype in (None, d.tag)]) for s in cuda]
    if not args.no_progress:
        sys.stderr.write(f"verifier lint: compiling {len(cuda)} CUDA kernels to PTX ({', '.join(arches)})\n")
    prefetch([j for spec, dts in selected if dts for j in _planned(spec, dts, arches)], jobs)
    reports = []
    for i, spec in enumerate(cuda):
        dts = [d for d in spec.dtypes if args.dtype in (None, d.tag)]
        if not dts:
            if args.dtype and all(args.dtype not in [d.tag for d in s.dtypes] for s in cuda):
                raise UsageError(f"no CUDA kernel declares dtype {args.dtype!r}", fix="see `verifier list`")
            continue
        if not args.no_progress:
            sys.stderr.write(f"verifier lint: [{i + 1}/{len(cuda)}] {spec.name}\n")
        report = KernelReport(spec=spec, device="cpu")
        t = time.monotonic()
        try:
            lint_spec(spec, report, dts, arches, repro=lint_repro(spec))
        except UserCodeError as e:  # the spec's own launches / defines raised: this kernel's error, the run goes on
            usercode.blame(report, e)
        except SpecError as e:  # malformed, found while linting it (a launch naming no tensor): the same
            usercode.blame(report, usercode.spec_error(spec, e))
        report.seconds = time.monotonic() - t
        reports.append(report)
    wall = time.monotonic() - t0
    result = Result(reports=reports, environment=_environment(),
                    options={"command": "lint", "arches": list(arches), "jobs": jobs, "wall_seconds": round(wall, 1)})
    write(render(result, args.format), args.output)
    s = result.summary()
    others = len(specs) - len(cuda)
    left = f"; {others} non-CUDA kernel(s) left out (nothing to compile to PTX)" if others else ""
    if not reports:  # nothing was checked: never exit 0 (README's exit 4), whatever else was selected
        sys.stderr.write(f"verifier lint: nothing was linted (exit {EXIT_NOTHING_CHECKED}): no CUDA kernel among the "
                         f"{len(specs)} selected{left}\n  fix: verifier lint reads the PTX of CUDA sources "
                         "(CudaKernel specs); pass them, or check Triton kernels and callables with verifier check\n")
        return EXIT_NOTHING_CHECKED
    warn = sum(1 for r in reports for f in r.findings if f.severity == "warning")
    sys.stderr.write(f"verifier lint: {s['kernels']} CUDA kernels ({', '.join(arches)}), {s['pass']} pass, "
                     f"{s['fail']} fail, {s['error']} error, {s['findings']} findings ({warn} warnings) "
                     f"in {wall:.1f} s{left}\n")
    return result.exit_code()


def _planned(spec, dts, arches) -> list:
    """The analyses to prefetch for ``spec``; none where its own code raises (lint_spec then reports it)."""
    from verifier.declare.usercode import UserCodeError
    from verifier.lint.step import plan

    try:
        return plan(spec, dts, arches)
    except (UserCodeError, SpecError):
        return []


def _environment() -> dict:
    """verifier.report.environment's facts without importing torch (lint needs no GPU and no torch: seconds saved)."""
    from verifier.report import environment as env
    from verifier.toolchain.nvcc import nvcc_version

    return {"gpu": None, "driver": None, "cuda": None, "torch": env._version("torch"), "triton": env._version("triton"),
            "cupy": env._version("cupy"), "nvcc": nvcc_version(), "commit": env._git_commit()}
