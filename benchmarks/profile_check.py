"""Where the time of a verdict goes: `verifier check` of one kernel, in this process, under cProfile, after
timing the imports on their own. Prints the phases and the top functions by cumulative time.

    python benchmarks/profile_check.py SPEC_FILE KERNEL [--level quick] [--device cuda] [--top 35] [--import-torch]

CUDA kernels are launched through the one CUDA launch path (the CUDA driver API) and import no torch, as in the
check child; --import-torch imports torch first, to see what a process that holds torch pays (the pytest plugin's).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("kernel")
    ap.add_argument("--level", default="quick")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("--import-torch", action="store_true", help="import torch first")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.import_torch:
        import torch  # noqa: F401

    t1 = time.perf_counter()
    from verifier.declare import registry
    from verifier.battery import check_kernel
    from verifier.gpu.probe import resolve_device
    from verifier.results.options import Options

    t2 = time.perf_counter()
    import cProfile
    import pstats

    spec = registry.load([args.spec], [args.kernel])[0]
    opts = Options(level=args.level, device=resolve_device(args.device))
    prof = cProfile.Profile()
    t3 = time.perf_counter()
    prof.enable()
    report = check_kernel(spec, opts)
    prof.disable()
    t4 = time.perf_counter()
    print(f"import torch {t1 - t0:.2f} s; import verifier.battery {t2 - t1:.2f} s; load spec {t3 - t2:.2f} s; "
          f"check_kernel {t4 - t3:.2f} s (verdict {report.verdict})")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
