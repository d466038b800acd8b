"""Time of the large cases at ``ci`` (issue #36: at most 1.5 s per kernel and dtype on one H200), in this process.

First a self-check of the aliased mapping (verifier.gpu.vmm) on the device: a pattern written once reads back
everywhere on shared chunks, a private row holds its own data, a write through one alias shows through another
and never on a private chunk. Then, for each kernel and dtype: one small case first (builds and loads the kernel
out of the timing), then each large case (large_index_2pow31, large_index_2pow32, rows_past_65535) through the
battery's own run_case: the gate, drawing the inputs, the launch body, the judge; its findings and time.

    python benchmarks/large_cases_ci_time.py [--kernel SPEC:NAME[:DTYPE]]... [--out FILE.json]

Exit 1 when a kernel and dtype takes over LIMIT_S for the three cases, or a correct kernel gets a finding.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LIMIT_S = 1.5
DEFAULT = ["kernels/cuda/rmsnorm_spec.py:cuda-rmsnorm-n2:bf16", "kernels/cuda/rmsnorm_spec.py:cuda-rmsnorm-n2:f32",
           "kernels/torch/spec.py:torch-softmax:bf16",
           "kernels/cuda/softmax_spec.py:cuda-softmax-s2:bf16",
           "kernels/cuda/fused_add_rmsnorm_spec.py:cuda-fused-add-rmsnorm-loop:bf16",
           "kernels/cuda/cross_entropy_spec.py:cuda-cross-entropy:bf16tof32",
           "kernels/triton/spec.py:triton-rmsnorm:bf16", "kernels/triton/spec.py:triton-online-softmax:bf16"]


def self_check() -> dict:
    """The mapping's aliasing, read back from the device."""
    from verifier.gpu import vmm
    from verifier.gpu import aliasing

    chunk = vmm.granularity()
    k = vmm.shared_chunks(chunk)
    n = (3 * k + 5) * chunk
    t0 = time.monotonic()
    plan = aliasing.plan(n, [(chunk * (k + 2) + 100, 4000)], chunk, k)
    buf = vmm.MappedBuffer(plan)
    pattern = np.arange(4096, dtype=np.int32)
    buf.fill_physical(pattern)
    own = np.full(1000, -7, dtype=np.int32)
    buf.upload(own, chunk * (k + 2) + 100)
    t1 = time.monotonic()
    far = buf.download(np.int32, 4096, n - 2 * chunk)  # a shared chunk far down the range
    mine = buf.download(np.int32, 1000, chunk * (k + 2) + 100)
    alias_at = chunk * (k + 2) + 100
    shared = [p for p in plan.pieces if p.phys == aliasing.SHARED]
    buf.upload(np.full(10, 99, dtype=np.int32), shared[0].first * chunk)  # through one mapping of the shared one
    through = buf.download(np.int32, 10, shared[1].first * chunk) if len(shared) > 1 else None  # read via another
    private_after = buf.download(np.int32, 1000, alias_at)
    out = {"granularity": chunk, "shared_chunks": k, "range_bytes": n, "physical_bytes": plan.physical_bytes,
           "map_fill_s": round(t1 - t0, 4), "pattern_far": bool((far == pattern).all()),
           "private_own": bool((mine == own).all()),
           "alias_through": None if through is None else bool((through == 99).all()),
           "private_untouched": bool((private_after == own).all())}
    buf.close()
    big = aliasing.plan(2 ** 33 * 4, [(2 ** 33, 1 << 20)], chunk, k)
    t0 = time.monotonic()
    b = vmm.MappedBuffer(big)
    b.fill_physical(pattern)
    out["map_fill_32GiB_range_s"] = round(time.monotonic() - t0, 4)
    b.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", action="append", help="SPEC_FILE:KERNEL[:DTYPE TAG] (repeatable)")
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    from verifier.battery import gate
    from verifier.battery.values import run_case
    from verifier.declare.registry import load_spec_file
    from verifier.inputs import large_family as C
    from verifier.inputs.cases import cases_for, draw
    from verifier.results.kernel import KernelReport
    from verifier.results.options import Options

    check = self_check()
    print("self-check", json.dumps(check), flush=True)
    rows, bad = [], 0
    opts = Options(device="cuda")
    for item in args.kernel or DEFAULT:
        spec_file, name, *tag = item.split(":")
        spec = next(k for k in load_spec_file(ROOT / spec_file) if k.name == name)
        for dt in [d for d in spec.dtypes if not tag or d.tag == tag[0]]:
            cases = {c.name: c for c in cases_for(spec, dt, "ci")}
            warm = cases["normal_small"]
            run_case(spec, dt, warm.name, draw(spec, dt, warm, 0), opts, KernelReport(spec=spec, device="cuda"))
            row = {"kernel": name, "dtype": dt.tag, "cases": {}}
            total = 0.0
            for cname in C.LARGE_CASES:
                c = cases[cname]
                report = KernelReport(spec=spec, device="cuda")
                t0 = time.monotonic()
                closed = gate.before_inputs(spec, dt, c.name, c.M, c.N, c.layout, "cuda")
                if closed is not None:
                    row["cases"][cname] = {"MxN": f"{c.M}x{c.N}", "closed": closed.text}
                    continue
                try:
                    run_case(spec, dt, c.name, draw(spec, dt, c, 0), opts, report, layout=c.layout)
                    err = None
                except Exception as e:  # a fault ends a battery; here it is the row's result
                    err = f"{type(e).__name__}: {str(e)[:200]}"
                wall = time.monotonic() - t0
                total += wall
                row["cases"][cname] = {"MxN": f"{c.M}x{c.N}", "s": round(wall, 3), "error": err,
                                       "findings": sorted({f.check for f in report.findings}),
                                       "notes": [str(n)[:160] for n in getattr(report, "notes", [])][-2:]}
            row["total_s"] = round(total, 3)
            ok = total <= LIMIT_S and all(not v.get("findings") and not v.get("error") for v in row["cases"].values())
            bad += not ok
            rows.append(row)
            print(("ok  " if ok else "BAD ") + json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"self_check": check, "rows": rows}, indent=1) + "\n")
    print(f"large_cases_ci_time: {len(rows) - bad} of {len(rows)} within {LIMIT_S} s and clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
