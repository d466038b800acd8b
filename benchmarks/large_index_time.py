"""Time and memory of the large-index case (issue #25: more than 2^31 elements, at most 30 s per kernel and dtype on
one H200).

For each kernel and dtype: the shape the case takes for it (the longest row of LARGE_N its supports() accepts), the
device memory the gate asks for (verifier.launch.large.required_bytes: the op's tensors, guards and 1 GiB), then

- ``verifier check SPEC --kernel K --dtype D --case large_index_2pow31 --device cuda`` in its own process: the wall
  time a user waits, its verdict (with --warm the kernel is first checked on one small case, so that building it is
  not in that time; tools/gpu_check_inputs25.sh runs it after the layout suites, which built every CUDA kernel);
- with --phases NAME, in this process, that kernel's phases: drawing the inputs (SparseRows), the launch body
  (device fills, the launch, the poison counted in chunks, the judged rows downloaded: verifier.launch.large) and
  the judge on the judged rows.

    python benchmarks/large_index_time.py [--kernel SPEC:NAME[:DTYPE]]... [--phases NAME]... [--warm] [--out FILE.json]

Without --kernel: a CUDA norm, softmax, fused add + RMSNorm and cross entropy (bf16 and f32) and two Triton kernels.
Exit 1 when a run is over LIMIT_S or its verdict is not pass.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LIMIT_S = 30.0
DEFAULT = ["kernels/cuda/rmsnorm_spec.py:cuda-rmsnorm-n2:bf16", "kernels/cuda/rmsnorm_spec.py:cuda-rmsnorm-n2:f32",
           "kernels/cuda/softmax_spec.py:cuda-softmax-s2:bf16",
           "kernels/cuda/fused_add_rmsnorm_spec.py:cuda-fused-add-rmsnorm-loop:bf16",
           "kernels/cuda/cross_entropy_spec.py:cuda-cross-entropy:bf16tof32",
           "kernels/triton/spec.py:triton-rmsnorm:bf16", "kernels/triton/spec.py:triton-online-softmax:bf16"]


def _cli(spec_file: str, kernel: str, tag: str) -> tuple:
    """Wall time and verdict of the check in its own process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "verifier.cli", "check", spec_file, "--kernel", kernel, "--dtype", tag, "--case",
           "large_index_2pow31", "--device", "cuda", "--format", "json", "--no-progress"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    try:
        k = json.loads(p.stdout)["kernels"][0]
        verdict = k["verdict"]
        notes = [n for n in k.get("notes", []) if "large_index" in n]
    except (ValueError, KeyError, IndexError):
        verdict, notes = f"exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}", []
    return wall, verdict, notes


def _phases(spec, dt) -> dict:
    """The case's phases in this process (the battery's own functions)."""
    from verifier.battery import gate
    from verifier.inputs.cases import draw, large_case
    from verifier.judge import Criteria, judge
    from verifier.launch import runner_for
    from verifier.launch.harness import execute

    case = large_case(spec, dt)
    closed = gate.before_inputs(spec, dt, case.name, case.M, case.N, case.layout, "cuda")
    if closed is not None:
        return {"skipped": closed.text}
    t0 = time.monotonic()
    xs = draw(spec, dt, case, 0)
    t1 = time.monotonic()
    out = execute(runner_for(spec), spec, xs, dt, spec.op_params(), "cuda", layout=case.layout)
    t2 = time.monotonic()
    verdict = judge(Criteria.of(spec, dt), xs, out.outputs, rows=out.rows)
    t3 = time.monotonic()
    return {"draw_s": round(t1 - t0, 2), "launch_body_s": round(t2 - t1, 2), "judge_s": round(t3 - t2, 2),
            "judged_ok": verdict.ok, "unwritten": sorted(out.unwritten), "guard_hits": sorted(out.guard_hits)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", action="append", help="SPEC_FILE:KERNEL[:DTYPE TAG] (repeatable)")
    ap.add_argument("--phases", action="append", default=[], help="also time this kernel's phases in-process")
    ap.add_argument("--warm", action="store_true", help="check each kernel on a small case first (builds it)")
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    from verifier.declare.registry import load_spec_file
    from verifier.inputs.cases import large_case
    from verifier.launch.large import required_bytes

    rows, bad = [], 0
    for item in args.kernel or DEFAULT:
        spec_file, name, *tag = item.split(":")
        spec = next(k for k in load_spec_file(ROOT / spec_file) if k.name == name)
        for dt in [d for d in spec.dtypes if not tag or d.tag == tag[0]]:
            case = large_case(spec, dt)
            need = required_bytes(spec.op, dt, case.M, case.N, spec.op_params())
            if args.warm:  # builds first: the large case's time is its own
                subprocess.run([sys.executable, "-m", "verifier.cli", "check", spec_file, "--kernel", name, "--dtype",
                                dt.tag, "--case", "normal_small", "--device", "cuda", "--no-progress"], cwd=ROOT,
                               capture_output=True)
            wall, verdict, notes = _cli(spec_file, name, dt.tag)
            row = {"kernel": name, "dtype": dt.tag, "M": case.M, "N": case.N, "elements": case.M * case.N,
                   "required_GB": round(need / 1e9, 2), "check_wall_s": round(wall, 2), "verdict": verdict,
                   "notes": notes, **(_phases(spec, dt) if name in args.phases else {})}
            ok = verdict == "pass" and wall <= LIMIT_S and not row.get("skipped")
            bad += not ok
            rows.append(row)
            print(("ok  " if ok else "BAD ") + json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    print(f"large_index_time: {len(rows) - bad} of {len(rows)} within {LIMIT_S:.0f} s and passing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
