"""Achieved memory bandwidth of the RMSNorm (N1–N4) and softmax (S1–S4) ladders, side by side with the
device-to-device copy bandwidth measured in the same run.

    python benchmarks/bandwidth.py [--M 8192] [--N 3584 2048] [--dtypes bf16 f32] [--iters 20]

Bandwidth counts the minimum traffic of the op (read x once, write y once; the weight vector is
negligible), so a kernel that reads x twice shows it as a lower figure. Every timed launch starts with
a cold L2: a buffer larger than the L2 is overwritten before each iteration, outside the timed region.
Times are CUDA-event medians. Needs a CUDA GPU, CuPy and nvcc.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LADDERS = {
    "rmsnorm": ["cuda-rmsnorm-n1", "cuda-rmsnorm-n2", "cuda-rmsnorm-n3", "cuda-rmsnorm-n4"],
    "softmax": ["cuda-softmax-s1", "cuda-softmax-s2", "cuda-softmax-s3", "cuda-softmax-s4"],
}
SPEC_FILES = {"rmsnorm": "kernels/cuda/rmsnorm_spec.py", "softmax": "kernels/cuda/softmax_spec.py"}


def _median_ms(fn, flush, iters: int) -> float:
    import torch

    times = []
    for _ in range(iters):
        flush()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--M", type=int, default=8192)
    ap.add_argument("--N", type=int, nargs="+", default=[3584, 2048])
    ap.add_argument("--dtypes", nargs="+", default=["bf16", "f32"])
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("bandwidth.py needs a CUDA GPU (torch sees none)", file=sys.stderr)
        return 2
    from verifier.dtypes import torch_dtype
    from verifier.registry import load_spec_file
    from verifier.runners import cuda as cu
    from verifier.spec import dtypes as mkdt

    specs = {k.name: k for f in SPEC_FILES.values() for k in load_spec_file(ROOT / f)}
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    scrub = torch.empty(max(4 * l2, 256 << 20), dtype=torch.uint8, device="cuda")

    def flush():
        scrub.fill_(1)

    print(f"# {torch.cuda.get_device_name(0)}, M={args.M}, L2={l2 >> 20} MiB flushed before every timed launch, "
          f"median of {args.iters}")
    print(f"{'kernel':20s} {'dtype':5s} {'N':>6s} {'time us':>9s} {'GB/s':>8s} {'copy GB/s':>10s} {'ratio':>6s}")
    for tag in args.dtypes:
        dt = mkdt(tag)
        td = torch_dtype(dt.input)
        for N in args.N:
            nbytes = args.M * N * torch.empty((), dtype=td).element_size()
            src = torch.randn(args.M, N, device="cuda").to(td)
            dst = torch.empty_like(src)
            copy_ms = _median_ms(lambda: dst.copy_(src), flush, args.iters)
            copy_gbs = 2 * nbytes / copy_ms / 1e6
            for op, names in LADDERS.items():
                for name in names:
                    spec = specs[name]
                    why = spec.check_supported(args.M, N, dt)
                    if why:
                        print(f"{name:20s} {tag:5s} {N:6d}  refused: {why}")
                        continue
                    x = torch.randn(args.M, N, device="cuda").to(td)
                    inputs = {"x": x}
                    if op == "rmsnorm":
                        inputs["w"] = (1 + 0.1 * torch.randn(N, device="cuda")).to(td)
                    outputs = {"y": torch.empty_like(x)}
                    prepared = cu.prepare(spec, inputs, outputs, spec.op_params(), dt)
                    cu.launch(prepared, sync=True)  # warm-up, with error checks
                    ms = _median_ms(lambda: cu.launch(prepared, sync=False), flush, args.iters)
                    gbs = 2 * nbytes / ms / 1e6
                    print(f"{name:20s} {tag:5s} {N:6d} {ms * 1e3:9.1f} {gbs:8.0f} {copy_gbs:10.0f} "
                          f"{gbs / copy_gbs:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
