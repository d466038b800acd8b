"""Where the README main job's time goes, phase by phase (issue #36: the bundled main job at most 45 s cold on one
H200): every kernel's check at ``ci``, one after another in this process, cold (fresh build and Triton caches), with
the time of each phase summed per kernel and per kind. A phase's time excludes the phases nested in it (a reference
computed inside the judge is the reference's), so the phases and ``other`` add up to the kernel's total.

    python benchmarks/main_job_phases.py [PATH ...] [--kernel NAME ...] [--device auto] [--jobs 16] [--out FILE.json]

``--jobs``: the parallelism `verifier check -j auto` would have (the GPU machine's CPUs): the script prints the sum
over kernels divided by it, a lower bound of the parallel run's wall time (kernels do not split across workers).
"""
from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (phase, module, attribute): the functions timed. Looked up when the phase runs, so a later import finds the wrapper.
PHASES = (
    ("nvcc", "verifier.toolchain.nvcc", "_run_nvcc"),
    ("lint", "verifier.battery", "static_hook"),
    ("triton-compile", "triton.compiler", "compile"),  # JITFunction binds it when a kernel is decorated (3.9)
    ("triton-compile", "triton.compiler.compiler", "compile"),
    ("triton-compile", "triton.runtime.jit", "compile"),  # older Triton: jit.py's own import
    ("triton-compile", "triton.runtime.jit", "JITFunction._do_compile"),  # with the disk cache's lookup
    ("inputs", "verifier.battery", "draw"),
    ("reference", "references", "reference"),
    ("invariants", "verifier.judge.invariants", "check"),
    ("budget", "verifier.judge.tolerance", "errors"),
    ("compare", "verifier.judge", "compare"),  # the names the judge calls them by
    ("compare", "verifier.judge", "compare_selection"),
    ("compare", "verifier.judge", "compare_kept"),
    ("compare", "verifier.judge.quantized", "compare_op"),
    ("launch", "verifier.battery.values", "execute"),  # poison, launch, read back (the kernel itself)
    ("hypothesis", "verifier.battery", "check_shapes"),
    ("determinism", "verifier.battery", "check_determinism"),
    ("refusal", "verifier.battery", "check_refusal"),
)
_stack: list = []
_spent: dict = defaultdict(float)


def _timed(phase: str, fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        t0 = time.perf_counter()
        _stack.append(0.0)  # time of phases nested in this one
        try:
            return fn(*args, **kwargs)
        finally:
            total = time.perf_counter() - t0
            nested = _stack.pop()
            _spent[phase] += total - nested
            if _stack:
                _stack[-1] += total
    run.__wrapped_phase__ = phase
    return run


def _install() -> list:
    done = []
    for phase, mod_name, attr in PHASES:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        owner, name = mod, attr
        if "." in attr:  # Class.method
            cls, name = attr.split(".", 1)
            owner = getattr(mod, cls, None)
        fn = getattr(owner, name, None) if owner is not None else None
        if fn is None or getattr(fn, "__wrapped_phase__", None):
            continue
        setattr(owner, name, _timed(phase, fn))
        done.append(f"{mod_name}.{attr}")
    return done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=["kernels/"])
    ap.add_argument("--kernel", action="append", default=[])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--level", default="ci")
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    os.environ.setdefault("VERIFIER_CACHE_DIR", tempfile.mkdtemp(prefix="kv-cold-"))
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-cold-"))
    from verifier.battery import check_kernel
    from verifier.declare.registry import load
    from verifier.gpu.probe import resolve_device
    from verifier.results.options import Options

    device = resolve_device(args.device)
    specs = [s for s in load(args.paths) if not args.kernel or s.name in args.kernel]
    if any(s.uses_triton for s in specs):  # the mode first: timing Triton's compiler imports it
        from verifier.launch.triton import activate

        activate("compiled" if device == "cuda" else "interpreter")
    patched = _install()
    print(f"device {device}; {len(specs)} kernels; timed: {', '.join(patched)}", flush=True)
    rows = []
    for spec in specs:
        _spent.clear()
        t0 = time.perf_counter()
        report = check_kernel(spec, Options(level=args.level, device=device))
        total = time.perf_counter() - t0
        phases = dict(_spent)
        phases["other"] = total - sum(phases.values())
        rows.append({"kernel": spec.name, "kind": spec.kind, "verdict": report.verdict, "seconds": total,
                     "phases": phases})
        print(f"{spec.name:42s} {spec.kind:9s} {report.verdict:9s} {total:7.2f} s  "
              + " ".join(f"{k}={v:.2f}" for k, v in sorted(phases.items(), key=lambda kv: -kv[1]) if v >= 0.05),
              flush=True)
    by_kind: dict = defaultdict(lambda: defaultdict(float))
    for r in rows:
        for k, v in r["phases"].items():
            by_kind[r["kind"]][k] += v
            by_kind["all"][k] += v
    print("\nper kind (seconds summed over kernels):")
    for kind, phases in by_kind.items():
        total = sum(phases.values())
        print(f"  {kind:9s} {total:8.1f} s  " + " ".join(f"{k}={v:.1f}" for k, v in
                                                     sorted(phases.items(), key=lambda kv: -kv[1])))
    total = sum(r["seconds"] for r in rows)
    print(f"\nsum {total:.1f} s over {len(rows)} kernels; / {args.jobs} jobs = {total / args.jobs:.1f} s "
          f"(a lower bound of `verifier check -j {args.jobs}`'s wall time)")
    if args.out:
        Path(args.out).write_text(json.dumps({"device": device, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
