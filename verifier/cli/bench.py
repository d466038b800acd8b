"""``verifier bench PATH...``: argument handling only; plan.py, timing.py and the renderers do the work.

Exit codes: 0 every kernel timed, 1 a kernel failed (its row says why), 2 usage error or no GPU.
The table goes to stdout (or --output); progress and the summary go to stderr.
"""
from __future__ import annotations

import os
import sys

from verifier.cli import preflight
from verifier.cli.args import add_selection_args
from verifier.constants import EXIT_FINDINGS, EXIT_OK
from verifier.errors import ToolMissing, UsageError

FORMATS = ("text", "json", "markdown")


def add_subparser(subparsers) -> None:
    from verifier.bench.plan import DEFAULT_SHAPES, MIN_RUNS

    shapes = ", ".join(f"{m}x{n}" for m, n in DEFAULT_SHAPES)
    b = subparsers.add_parser(
        "bench", help="achieved bandwidth of kernels, side by side with a device-to-device copy (GPU only)",
        description="Time kernels with CUDA events, the L2 flushed before every timed launch, and report the "
                    "median and spread, the bytes the op must move (inputs read once, outputs written once), GB/s "
                    "and the ratio to a device-to-device copy of the same bytes timed in the same run. Needs a "
                    "CUDA GPU (exit 2 without one).")
    add_selection_args(b)
    b.add_argument("--shape", action="append", metavar="MxN", help=f"rows x columns (repeatable; default {shapes})")
    b.add_argument("--dtype", action="append", metavar="TAG",
                   help="only this dtype variant, e.g. bf16 (repeatable; default every declared one)")
    b.add_argument("--against", action="append", metavar="SPEC_OR_GLOB",
                   help="also time these kernels on the same inputs: a spec file or directory (e.g. kernels/torch, "
                        "benchmarks/liger_spec.py), or a name glob over the kernels under PATH (repeatable)")
    b.add_argument("--runs", default="50", metavar="N", help=f"timed runs per kernel and shape (>= {MIN_RUNS}; default 50)")
    b.add_argument("--warmup", default="5", metavar="N", help="untimed launches first (default 5)")
    b.add_argument("--format", default="text", help="text | json | markdown (default text)")
    b.add_argument("--output", metavar="FILE", help="write the table here, not stdout")
    b.add_argument("--plot", metavar="FILE.png", help="also draw GB/s per shape per kernel (needs kernel-verifier[plot])")


def _int(text, name, low):
    try:
        v = int(text)
    except ValueError:
        v = None
    if v is None or v < low:
        raise UsageError(f"--{name} {text!r} is not a whole number >= {low}", fix=f"e.g. --{name} {max(low, 50)}")
    return v


def _against(values, paths, mains):
    """Kernels named by --against: a spec path loads all its kernels; anything else is a glob over PATH's kernels."""
    import fnmatch

    from verifier.declare import registry

    found, main_names = [], {k.name for k in mains}
    for v in values or ():
        if os.path.exists(v):
            found.extend(registry.load([v]))
            continue
        if any(c in v for c in "/\\") or v.endswith(".py"):
            raise UsageError(f"--against {v}: no such spec file or directory", fix="pass an existing path or a name glob")
        hits = [k for k in registry.load(paths) if fnmatch.fnmatchcase(k.name, v) and k.name not in main_names]
        if not hits:
            raise UsageError(f"--against {v!r} matches no kernel under {', '.join(map(str, paths))}",
                             fix="pass a spec file (e.g. kernels/torch) or a glob over `verifier list` names")
        found.extend(hits)
    ops = {k.op for k in mains}
    unique = list({k.name: k for k in found}.values())
    if values and not any(k.op in ops for k in unique):
        raise UsageError(f"--against names no kernel of the op(s) benchmarked ({', '.join(sorted(ops))})",
                         fix="compare kernels of the same op")
    return unique


def validate(args):
    """Everything that can be wrong with the command line, before any GPU work."""
    from verifier.bench.plan import DEFAULT_SHAPES, MIN_RUNS, parse_shape

    if args.format not in FORMATS:
        raise UsageError(f"--format {args.format!r} is not a format", fix=f"use one of {', '.join(FORMATS)}")
    runs = _int(args.runs, "runs", MIN_RUNS)
    warmup = _int(args.warmup, "warmup", 1)
    shapes = [parse_shape(s) for s in args.shape] if args.shape else list(DEFAULT_SHAPES)
    for path, what in ((args.output, "--output"), (args.plot, "--plot")):
        preflight.output_file(path, what)
    if args.plot:
        from verifier.bench.plot import require_matplotlib

        if not args.plot.lower().endswith(".png"):
            raise UsageError(f"--plot {args.plot}: not a .png file", fix="e.g. --plot bench.png")
        require_matplotlib()
    return runs, warmup, shapes


def run(args) -> int:
    from verifier.bench import json as bjson
    from verifier.bench import markdown, text
    from verifier.bench.plan import dtype_plan
    from verifier.bench.timing import NO_GPU, gpu_available, run_bench
    from verifier.declare import registry

    runs, warmup, shapes = validate(args)
    paths = args.paths or (["kernels"] if os.path.isdir("kernels") else None)
    if not paths:
        raise UsageError("no PATH given and no kernels/ directory here", fix="pass spec files or directories: verifier bench PATH...")
    kernels = registry.load(paths, args.kernel)
    against = _against(args.against, paths, kernels)
    preflight.build_cache(kernels + against)
    dts = dtype_plan(kernels, args.dtype)
    if not gpu_available():
        raise UsageError(NO_GPU[0], fix=NO_GPU[1])
    preflight.triton_cache(kernels + against, "cuda")

    def progress(msg):
        sys.stderr.write(f"verifier bench: {msg}\n")

    try:
        result = run_bench(kernels, against, shapes, dts, runs=runs, warmup=warmup, progress=progress)
    except ToolMissing as e:
        raise UsageError(e.message, fix=e.fix) from None
    render = {"text": text.render, "json": bjson.render, "markdown": markdown.render}[args.format]
    from verifier.report import write

    write(render(result), args.output)
    if args.plot:
        from verifier.bench.plot import write as plot

        try:
            plot(result, args.plot)
        except OSError as e:  # a full disk after the run: the environment's problem, not ours
            raise UsageError(f"cannot write --plot {args.plot}: {e.strerror or e}",
                             fix="free space on its file system, or choose a path on another one") from None
    for M, N, tag, why in result.warnings:
        sys.stderr.write(f"verifier bench: warning: {M}x{N} {tag}: {why}\n")
    bad = [r for r in result.rows if r.status == "error"]
    timed = sum(r.status == "ok" and r.role != "copy" for r in result.rows)
    refused = sum(r.status == "refused" for r in result.rows)
    sys.stderr.write(f"verifier bench: {timed} timed, {refused} refused, {len(bad)} failed"
                     + (f" ({', '.join(sorted({r.kernel for r in bad}))})" if bad else "") + "\n")
    return EXIT_FINDINGS if bad else EXIT_OK
