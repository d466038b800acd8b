"""Cost of containing kernels that kill their process, on the CPU, measured side by side in one run.

    python benchmarks/isolation_cost.py                      # kernels/torch, level quick
    python benchmarks/isolation_cost.py kernels/triton --level quick

Checks the same kernels three ways through verifier.isolation.check_all and prints each wall time and the ratios:
in this process (isolate=False: a segfault ends the run), in a fork of this process per kernel (isolate=None,
the CPU default: verifier.isolation.forked), and in a fresh interpreter per kernel (isolate=True, ``--isolate``).
The order is in-process, fork, spawn, then in-process again (the first run pays for imports and caches).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[str(REPO / "kernels" / "torch")])
    ap.add_argument("--level", default="quick")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from verifier.declare import registry
    from verifier.isolation import check_all
    from verifier.results.options import Options

    specs = [s for s in registry.load(args.paths) if s.kind in ("callable", "triton")]
    opts = Options(level=args.level, device="cpu")
    times = {}
    for label, isolate in (("warm-up (in-process)", False), ("fork per kernel", None),
                           ("fresh interpreter per kernel", True), ("in-process", False)):
        t0 = time.monotonic()
        reports = check_all(specs, opts, isolate=isolate)
        times[label] = time.monotonic() - t0
        verdicts = sorted({r.verdict for r in reports})
        print(f"{label:30s} {times[label]:7.1f} s  {len(reports)} kernels, verdicts {verdicts}", flush=True)
    base = times["in-process"]
    print(f"fork / in-process:              {times['fork per kernel'] / base:.2f}x")
    print(f"fresh interpreter / in-process: {times['fresh interpreter per kernel'] / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
