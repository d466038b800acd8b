"""Time to a verdict for one CUDA kernel (issue #15: quick <= 3 s warm and <= 8 s cold, thorough --sanitize
<= 60 s, on one H200). The check child launches CUDA kernels through the one CUDA launch path (the CUDA driver
API, verifier.launch.cuda) and imports no torch.

`verifier check SPEC --kernel K` at --level quick on an empty build cache (cold), then with a warm cache quick
(median of --repeats), ci, thorough and thorough --sanitize; then one more warm quick run with $VERIFIER_PHASES
set, broken down into phases: parent start-up (interpreter, CLI, spec loading, up to the child's spawn), child
interpreter start, child imports, spec loading, the battery (under cProfile: build cache, static lint, launches,
references, imports done inside the battery, the rest) and the child's exit and the parent's report.

    python benchmarks/verdict_time.py [--spec kernels/cuda/rmsnorm_spec.py] [--kernel cuda-rmsnorm-n3]
        [--repeats 3] [--no-sanitize] [--out DIR]
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
BATTERY = [("build cache (nvcc or cached cubin/PTX)", "verifier/toolchain/nvcc.py", ("compile_cubin", "compile_ptx")),
           ("static lint", "verifier/lint/step.py", ("battery_hook",)),
           ("launches (harness bodies)", "verifier/launch/harness.py", ("_launch_device", "_launch_torch")),
           ("references (float64 + mpmath)", "references/__init__.py", ("reference",)),
           ("imports inside the battery", "_bootstrap>", ("_find_and_load",))]


def _env(cache: str, phases: str | None = None) -> dict:
    env = dict(os.environ, VERIFIER_CACHE_DIR=cache, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("VERIFIER_CUDA_LAUNCH", None)  # retired: it would only add a warning line
    env.pop("VERIFIER_PHASES", None)
    if phases:
        env["VERIFIER_PHASES"] = phases
    return env


def check(args, cache: str, budget: str, extra=(), phases=None) -> tuple:
    cmd = [sys.executable, "-m", "verifier.cli", "check", args.spec, "--kernel", args.kernel, "--level", budget,
           "--no-progress", *extra]
    t = time.time()
    out = subprocess.run(cmd, cwd=ROOT, env=_env(cache, phases), capture_output=True, text=True, timeout=900)
    wall = time.time() - t
    if out.returncode not in (0, 1):
        sys.stderr.write(f"{' '.join(cmd[2:])}: exit {out.returncode}\n{out.stderr[-2000:]}\n")
    return wall, out.returncode, t


def _cumulative(prof: str, suffix: str, names) -> float:
    st = pstats.Stats(prof).stats
    return sum(v[3] for (f, _line, fn), v in st.items() if f.endswith(suffix) and fn in names)


def breakdown(args, cache: str, work: str) -> dict:
    marks_file = os.path.join(work, "phases.txt")
    wall, _rc, t0 = check(args, cache, "quick", phases=marks_file)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="kernels/cuda/rmsnorm_spec.py")
    ap.add_argument("--kernel", default="cuda-rmsnorm-n3")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-sanitize", action="store_true", help="leave out thorough --sanitize")
    ap.add_argument("--out", help="folder for the phase marks and profiles (default: a temporary one)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from verifier.gpu.probe import driver_device_count

    if driver_device_count() == 0:
        print("verdict_time: needs an NVIDIA GPU and its driver (libcuda)", file=sys.stderr)
        return 2
    work = args.out or tempfile.mkdtemp(prefix="verdict-time-")
    os.makedirs(work, exist_ok=True)
    rows: dict = {}
    cold = os.path.join(work, "cache-cold")  # an empty build cache
    shutil.rmtree(cold, ignore_errors=True)
    rows["quick, cold cache"] = check(args, cold, "quick")[:2]
    warm = os.path.join(work, "cache-warm")
    check(args, warm, "quick")  # warm the cache (untimed)
    runs = [check(args, warm, "quick")[:2] for _ in range(args.repeats)]
    rows["quick, warm cache"] = (statistics.median(w for w, _ in runs), max(rc for _, rc in runs))
    budgets = [("ci", ()), ("thorough", ())] + ([] if args.no_sanitize else [("thorough --sanitize", ("--sanitize",))])
    for label, extra in budgets:
        rows[label + ", warm cache"] = check(args, warm, label.split()[0], extra)[:2]
    phases = breakdown(args, warm, work)

    print(f"verifier check {args.spec} --kernel {args.kernel}: wall seconds (exit code), warm quick = median of "
          f"{args.repeats}")
    for row, (wall, rc) in rows.items():
        print(f"{row:40s} {wall:9.2f} ({rc})")
    print("\nphases of one warm quick run (seconds; the battery under cProfile, which slows it)")
    for row, value in phases.items():
        print(f"{row:62s} {value:8.2f}")
    print(f"\nmarks and cProfile dumps: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
