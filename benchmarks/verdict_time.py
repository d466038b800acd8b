"""Time to a verdict (issue #24: quick, 3 dtypes, on one H200: <= 3 s warm for a CUDA kernel, <= 5 s warm for a
Triton kernel and a torch callable, <= 10 s cold for any). The check runs in a fork of the `verifier` process
(verifier.isolation.forked), which imports torch and Triton once where a Triton kernel or a callable needs them; a
CUDA kernel launches through the CUDA driver API (verifier.launch.cuda) and needs no torch.

For each target kernel: `verifier check SPEC --kernel K` at --level quick with empty build and Triton caches
(cold; where PYTHONDONTWRITEBYTECODE is set, first a run whose bytecode cache is empty too, shown apart: that
cache belongs to the Python installation, as site-packages' __pycache__ does elsewhere), then with warm caches
(median of --repeats); unless --quick-only, also ci, thorough and thorough
--sanitize; then one more warm quick run with $VERIFIER_PHASES set, broken down into phases: parent start-up
(interpreter, CLI, spec loading, up to the child's spawn), child interpreter start, child imports, spec loading,
the battery (under cProfile: build cache, static lint, launches, references, torch's and Triton's imports, torch's
CUDA initialization, Triton compiles and its launch path, imports done inside the battery, the rest) and the
child's exit and the parent's report.

    python benchmarks/verdict_time.py [--target SPEC:KERNEL ...] [--repeats 3] [--quick-only] [--no-sanitize]
        [--out DIR]
(default target kernels/cuda/rmsnorm_spec.py:cuda-rmsnorm-n3; --spec / --kernel name one target too)
"""
from __future__ import annotations

import argparse
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# battery phases: (label, file suffix, function) of cProfile entries whose cumulative time is the phase
# The first four are disjoint and subtracted from the battery for "the rest"; the others overlap them.
BATTERY = [("build cache (nvcc or cached cubin/PTX)", "verifier/toolchain/nvcc.py", ("compile_cubin", "compile_ptx")),
           ("static lint", "verifier/lint/step.py", ("battery_hook",)),
           ("launches (harness bodies)", "verifier/launch/harness.py", ("_launch_device", "_launch_torch")),
           ("references (float64 + mpmath)", "references/__init__.py", ("reference",)),
           ("imports inside the battery", "_bootstrap>", ("_find_and_load",)),
           ("- import torch", "torch/__init__.py", ("<module>",)),
           ("- import triton", "triton/__init__.py", ("<module>",)),
           ("torch's CUDA initialization", "torch/cuda/__init__.py", ("_lazy_init",)),
           ("Triton resources step (compiles at 3 N)", "verifier/launch/triton.py", ("compiled_resources",)),
           ("Triton compiles (cache misses and hits)", "triton/compiler/compiler.py", ("compile",)),
           ("Triton launch path (jit run: specialize, cache, launch)", "triton/runtime/jit.py", ("run",))]


def _env(cache: str, phases: str | None = None, pycache: str | None = None) -> dict:
    env = dict(os.environ, VERIFIER_CACHE_DIR=cache, TRITON_CACHE_DIR=os.path.join(cache, "triton"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if pycache:  # where PYTHONDONTWRITEBYTECODE is set: verifier's bytecode cache (verifier/cli _keep_bytecode)
        env["VERIFIER_PYCACHE"] = pycache
    env.pop("VERIFIER_CUDA_LAUNCH", None)  # retired: it would only add a warning line
    env.pop("VERIFIER_PHASES", None)
    if phases:
        env["VERIFIER_PHASES"] = phases
    return env


def check(target, cache: str, budget: str, extra=(), phases=None, pycache=None) -> tuple:
    spec, kernel = target
    cmd = [sys.executable, "-m", "verifier.cli", "check", spec, "--kernel", kernel, "--level", budget,
           "--no-progress", *extra]
    t = time.time()
    out = subprocess.run(cmd, cwd=ROOT, env=_env(cache, phases, pycache), capture_output=True, text=True,
                         timeout=900)
    wall = time.time() - t
    if out.returncode not in (0, 1):
        sys.stderr.write(f"{' '.join(cmd[2:])}: exit {out.returncode}\n{out.stderr[-2000:]}\n")
    return wall, out.returncode, t


def _cumulative(prof: str, suffix: str, names) -> float:
    st = pstats.Stats(prof).stats
    return sum(v[3] for (f, _line, fn), v in st.items() if f.endswith(suffix) and fn in names)


def breakdown(target, cache: str, work: str) -> dict:
    marks_file = os.path.join(work, f"phases-{target[1]}.txt")
    wall, _rc, t0 = check(target, cache, "quick", phases=marks_file)
    marks = {}
    for ln in Path(marks_file).read_text().splitlines():
        name, value = ln.split()
        marks.setdefault(name, float(value))
    end = t0 + wall
    out = {"total (profiled run)": wall,
           "parent start-up (to the child's spawn)": marks["spawn"] - t0,
           "child interpreter start": marks["child-start"] - marks["spawn"],
           "child imports": marks["child-imported"] - marks["child-start"],
           "child spec loading": marks["spec-loaded"] - marks["child-imported"],
           "battery (under cProfile)": marks["battery-done"] - marks["spec-loaded"]}
    prof = marks_file + ".prof"
    rest = out["battery (under cProfile)"]
    for label, suffix, names in BATTERY:
        out[f"  {label}"] = _cumulative(prof, suffix, names)
    rest -= sum(out[f"  {label}"] for label, *_ in BATTERY[:4])  # imports overlap the others: not subtracted
    out["  rest of the battery (compare, tolerance, invariants, inputs)"] = rest
    out["child exit + parent report"] = end - marks["battery-done"]
    return out


# issue #24's targets, quick, 3 dtypes, one H200: (warm, cold) seconds by kind
TARGETS = {"cuda": (3.0, 10.0), "triton": (5.0, 10.0), "callable": (5.0, 10.0)}


def measure(target, args, work: str) -> tuple:
    rows: dict = {}
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):  # Python's own bytecode cache is verifier's to fill here too
        first = os.path.join(work, f"cache-first-{target[1]}")
        shutil.rmtree(first, ignore_errors=True)
        rows["quick, first run (bytecode cache empty too)"] = check(target, first, "quick",
                                                                    pycache=os.path.join(first, "pycache"))[:2]
    cold = os.path.join(work, f"cache-cold-{target[1]}")  # empty build and Triton caches
    shutil.rmtree(cold, ignore_errors=True)
    rows["quick, cold caches"] = check(target, cold, "quick")[:2]
    warm = args.warm_cache or os.path.join(work, "cache-warm")
    check(target, warm, "quick")  # warm the caches (untimed)
    runs = [check(target, warm, "quick")[:2] for _ in range(args.repeats)]
    rows["quick, warm caches"] = (statistics.median(w for w, _ in runs), max(rc for _, rc in runs))
    budgets = [] if args.quick_only else \
        [("ci", ()), ("thorough", ())] + ([] if args.no_sanitize else [("thorough --sanitize", ("--sanitize",))])
    for label, extra in budgets:
        rows[label + ", warm caches"] = check(target, warm, label.split()[0], extra)[:2]
    return rows, breakdown(target, warm, work)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", action="append", metavar="SPEC:KERNEL", help="a kernel to time (repeatable)")
    ap.add_argument("--spec", default="kernels/cuda/rmsnorm_spec.py")
    ap.add_argument("--kernel", default="cuda-rmsnorm-n3")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick-only", action="store_true", help="only quick, cold and warm (and its phases)")
    ap.add_argument("--no-sanitize", action="store_true", help="leave out thorough --sanitize")
    ap.add_argument("--out", help="folder for the phase marks and profiles (default: a temporary one)")
    ap.add_argument("--warm-cache", metavar="DIR", help="the warm build and Triton cache to use (VERIFIER_CACHE_DIR; "
                                                        "default: one of its own under --out, warmed first)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from verifier.declare import registry
    from verifier.gpu.probe import driver_device_count

    if driver_device_count() == 0:
        print("verdict_time: needs an NVIDIA GPU and its driver (libcuda)", file=sys.stderr)
        return 2
    targets = [tuple(t.rsplit(":", 1)) for t in args.target] if args.target else [(args.spec, args.kernel)]
    work = args.out or tempfile.mkdtemp(prefix="verdict-time-")
    os.makedirs(work, exist_ok=True)
    failed = 0
    for target in targets:
        kind = registry.load([target[0]], [target[1]])[0].kind
        rows, phases = measure(target, args, work)
        print(f"\nverifier check {target[0]} --kernel {target[1]} ({kind}): wall seconds (exit code), warm quick = "
              f"median of {args.repeats}")
        for row, (wall, rc) in rows.items():
            print(f"{row:40s} {wall:9.2f} ({rc})")
        print("phases of one warm quick run (seconds; the battery under cProfile, which slows it)")
        for row, value in phases.items():
            print(f"{row:62s} {value:8.2f}")
        warm_s, cold_s = TARGETS.get(kind, (5.0, 10.0))
        ok = rows["quick, warm caches"][0] <= warm_s and rows["quick, cold caches"][0] <= cold_s
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} verdict time {target[1]}: warm {rows['quick, warm caches'][0]:.2f} s "
              f"(<= {warm_s:g}), cold {rows['quick, cold caches'][0]:.2f} s (<= {cold_s:g})")
    print(f"\nmarks and cProfile dumps: {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
