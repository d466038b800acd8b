"""Wall time of the CI test selection with one xdist worker and with ``-n auto``, in one run.

    python benchmarks/ci_suite_time.py                      # tests/ and suites/ (the CI selection)
    python benchmarks/ci_suite_time.py suites -- --verifier-level quick
    python benchmarks/ci_suite_time.py --warmup suites/test_ops.py -- -k test_softmax --verifier-device cuda   # GPU machine

Both runs are fresh ``python -m pytest`` processes on the same selection and options; the nvcc build cache
is warmed first (one build run) so neither pays for cold compiles. On a GPU, Triton's JIT cache fills on
the first run of each kernel specialization, which would favour whichever run goes second: ``--warmup``
runs the whole selection once, untimed, before both (seen on two H200s: 78 s cold vs 62 s warm for -n auto).
Prints each wall time, the outcome line pytest printed, the worker count ``-n auto`` chose, the speed-up
ratio, and the CPU seconds of each run (children included), which other load on the machine does not inflate.
"""
from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|skipped|error).*?) in [\d.]+s", re.M)
_WORKERS = re.compile(r"created: (\d+)/\d+ workers")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(workers: str, paths: list, extra: list) -> tuple:
    """(wall s, CPU s of the run and its workers, exit code, pytest's outcome line, worker count)."""
    cmd = [sys.executable, "-m", "pytest", "-n", workers, *paths, *extra]  # not -q: xdist then says "created: N/N"
    t0, c0 = time.monotonic(), _children_cpu()
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall, cpu = time.monotonic() - t0, _children_cpu() - c0
    text = out.stdout + out.stderr
    summary = _SUMMARY.findall(text)
    created = _WORKERS.search(text)
    return wall, cpu, out.returncode, (summary[-1] if summary else text.strip().splitlines()[-1:]), \
        int(created.group(1)) if created else None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    paths = argv[:argv.index("--")] if "--" in argv else argv
    if any(a in ("-h", "--help") for a in paths):
        print(__doc__)
        return 0
    warmup = "--warmup" in paths
    paths = [p for p in paths if p != "--warmup"] or ["tests", "suites"]
    warm = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "suites", "-k", "build", *extra],
                          cwd=REPO, capture_output=True, text=True)
    print(f"build cache warmed (exit {warm.returncode}); {os.cpu_count()} CPUs; selection: {' '.join(paths)} "
          f"{' '.join(extra)}", flush=True)
    if warmup:
        wall, _, code, summary, _ = run("auto", paths, extra)
        print(f"warm-up run (untimed for the ratio): {wall:.1f} s, exit {code}, {summary}", flush=True)
    results = {}
    for workers in ("1", "auto"):
        wall, cpu, code, summary, n = run(workers, paths, extra)
        results[workers] = wall
        print(f"-n {workers:4s}: {wall:7.1f} s wall, {cpu:7.1f} s CPU  exit {code}  workers {n or workers}  {summary}",
              flush=True)
    print(f"ratio (-n 1 / -n auto wall): {results['1'] / results['auto']:.2f}x; load average now "
          f"{os.getloadavg()[0]:.1f} (other processes on the machine inflate wall times, not CPU times)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
