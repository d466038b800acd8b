"""Wall time of `verifier lint` over the bundled CUDA kernels with a warm nvcc cache, against the 30 s budget
of CI (issue 14), side by side with the build check of the same kernels (`verifier check --device cpu`, which
builds cubins, reads ptxas resources and runs the same static step).

    python benchmarks/lint_time.py [PATH ...]   (default kernels/cuda)

The first, untimed run of each command warms the nvcc cache (PTX and cubins); each timed command then runs
`--repeat` times (default 2) and the best wall time counts. `--lint-only` skips the build check (e.g. under
`taskset -c 0,1` on a bigger machine, to measure on 2 cores). Prints the CPU count and the load average: other
processes on the machine inflate wall times.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

BUDGET_S = 30.0


def _run(cmd: list) -> tuple:
    t0 = time.monotonic()
    c0 = os.times()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    c1 = os.times()
    wall = time.monotonic() - t0
    cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    return wall, cpu, proc.returncode, proc.stderr.strip().splitlines()[-1:] or [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=["kernels/cuda"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--lint-only", action="store_true", help="skip the build-check comparison (no cubins to build)")
    args = ap.parse_args(argv)
    exe = [sys.executable, "-m", "verifier.cli"]
    lint = [*exe, "lint", *args.paths, "--no-progress"]
    build = [*exe, "check", *args.paths, "--device", "cpu", "--no-progress", "--format", "json"]
    commands = [("verifier lint", lint)] + ([] if args.lint_only else [("verifier check --device cpu", build)])
    for _, cmd in commands:
        _run(cmd)  # warm the nvcc cache
    rows = []
    for name, cmd in commands:
        best = min((_run(cmd) for _ in range(max(1, args.repeat))), key=lambda r: r[0])
        rows.append((name, best))
        wall, cpu, rc, last = best
        print(f"{name:30s}: {wall:6.1f} s wall, {cpu:6.1f} s CPU, exit {rc}  {last[0]}")
    lint_wall = rows[0][1][0]
    vs_build = f"; lint / build check: {lint_wall / rows[1][1][0]:.2f}" if len(rows) > 1 else ""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"lint / CI budget {BUDGET_S:.0f} s: {lint_wall / BUDGET_S:.2f}{vs_build}; {cpus} CPUs usable, "
          f"load average {os.getloadavg()[0]:.1f}")
    return 0 if lint_wall < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
