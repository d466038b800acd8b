"""Time of the large cases of Triton kernels on a CPU (issue #36: the interpreter on aliased host memory, only the
programs owning the judged rows run: verifier.launch.large, verifier.launch.row_owners), in this process.

For each Triton kernel and dtype (default: every Triton kernel under kernels/, its first dtype): one small case
first (imports the module and warms the interpreter, out of the timing), then each large case at ``--level``
through the battery's own run_case: the gate, drawing the inputs, the launch body, the judge. Prints, per kernel
and dtype, each case's time, findings and note (a case the CPU cannot run on part of the grid says why).

    python benchmarks/large_cases_cpu_time.py [--kernel SPEC:NAME[:DTYPE]]... [--all-dtypes] [--out FILE.json]

Exit 1 when a kernel that is not a defect gets a finding or an error.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


RSS_LIMIT = 6 << 30  # a run past this much resident memory is ended (the machine is shared): a case drew too much


def _guard_memory() -> None:
    import os
    import threading

    def watch():
        page = os.sysconf("SC_PAGE_SIZE")
        while True:
            with open("/proc/self/statm") as f:
                rss = int(f.read().split()[1]) * page
            if rss > RSS_LIMIT:
                print(f"large_cases_cpu_time: resident memory {rss / 1e9:.1f} GB past {RSS_LIMIT / 1e9:.1f} GB: "
                      "ended", flush=True)
                import faulthandler

                faulthandler.dump_traceback(all_threads=True)
                os._exit(3)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", action="append", help="SPEC_FILE:NAME[:DTYPE] (repeatable)")
    ap.add_argument("--all-dtypes", action="store_true", help="every declared dtype (default: the first)")
    ap.add_argument("--level", default="ci")
    ap.add_argument("--out")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first SKIP kernels")
    args = ap.parse_args()
    _guard_memory()
    from verifier.launch.triton import activate

    activate("interpreter")
    from verifier.battery import gate
    from verifier.battery.values import run_case
    from verifier.declare.registry import load, load_spec_file
    from verifier.inputs import large_family as C
    from verifier.inputs.cases import DrawTooLarge, cases_for, draw
    from verifier.results.kernel import KernelReport
    from verifier.results.options import Options

    opts = Options(device="cpu", level=args.level)
    if args.kernel:
        items = []
        for item in args.kernel:
            spec_file, name, *tag = item.split(":")
            items.append((next(k for k in load_spec_file(ROOT / spec_file) if k.name == name), tag))
    else:
        items = [(k, []) for k in load([ROOT / "kernels"]) if k.uses_triton]
    rows, bad = [], 0
    for spec, tag in items[args.skip:]:
        dts = [d for d in spec.dtypes if not tag or d.tag == tag[0]]
        for dt in dts if (args.all_dtypes or tag) else dts[:1]:
            cases = {c.name: c for c in cases_for(spec, dt, args.level)}
            row = {"kernel": spec.name, "dtype": dt.tag, "cases": {}}
            warm = cases.get("normal_small")
            try:
                if warm is not None:
                    run_case(spec, dt, warm.name, draw(spec, dt, warm, 0), opts, KernelReport(spec=spec, device="cpu"))
            except Exception:
                pass
            total = 0.0
            for cname in C.LARGE_CASES:
                c = cases.get(cname)
                if c is None:
                    continue
                report = KernelReport(spec=spec, device="cpu")
                t0 = time.monotonic()
                closed = gate.before_inputs(spec, dt, c.name, c.M, c.N, c.layout, "cpu", args.level)
                err = None
                if closed is None:
                    try:
                        run_case(spec, dt, c.name, draw(spec, dt, c, 0), opts, report, layout=c.layout)
                    except gate.NotRun as e:
                        closed = e.closed
                    except DrawTooLarge as e:
                        closed = gate.Closed(gate.DEVICE, e.reason, e.reason)
                    except Exception as e:  # a fault ends a battery; here it is the row's result
                        err = f"{type(e).__name__}: {str(e)[:200]}"
                wall = time.monotonic() - t0
                total += wall
                row["cases"][cname] = {"MxN": f"{c.M}x{c.N}", "s": round(wall, 3), "error": err,
                                       "findings": sorted({f.check for f in report.findings}),
                                       "not_run": closed.reason[:300] if closed else None}
            row["total_s"] = round(total, 3)
            ok = spec.name.startswith("defect-") or all(not v["findings"] and not v["error"]
                                                        for v in row["cases"].values())
            bad += not ok
            rows.append(row)
            print(("ok  " if ok else "BAD ") + json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    print(f"large_cases_cpu_time: {len(rows) - bad} of {len(rows)} clean; "
          f"{sum(r['total_s'] for r in rows):.1f} s in all")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
