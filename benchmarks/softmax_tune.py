"""Every S5 and S5f configuration of kernels/cuda/softmax_fast.cu (built with -DKV_S5_TUNE) at every shape, f32 and
bf16, timed like `verifier bench` (L2 flushed, CUDA events, median) next to the copy of the same bytes, after a
check against torch.softmax. Picks the size-class tables S5_16, S5_32 and S5F_16 of softmax_fast_spec.py. Then every
cluster configuration (softmax_cluster_c<blocks per row>_t<threads>_v<vectors>) at the vocab shape, which picks
kCluster / kClusterThreads / the VECS of KV_CLUSTER.

    python benchmarks/softmax_tune.py [--N 1024 2048 3584 4096 8192] [--M 8192] [--runs 30] [--vocab 32x152064]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--M", type=int, default=8192)
    ap.add_argument("--N", type=int, nargs="+", default=[1024, 2048, 3584, 4096, 8192])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--vocab", default="32x152064", help="MxN of the cluster configurations, or 'none' to skip them")
    ap.add_argument("--dtype", nargs="+", default=["f32", "bf16"])
    args = ap.parse_args(argv)
    import numpy as np
    import torch

    from verifier.bench.plan import summarize
    from verifier.bench.timing import NO_GPU, Timer, gpu_available
    from verifier.gpu import libcuda as cd
    from verifier.gpu.probe import device_arch
    from verifier.toolchain.nvcc import compile_cubin

    if not gpu_available():
        print(NO_GPU[0], file=sys.stderr)
        return 2
    res = compile_cubin(ROOT / "kernels/cuda/softmax_fast.cu", arch=device_arch(), defines={"KV_S5_TUNE": 1})
    timer = Timer(args.runs, 3)
    entries_all = sorted(res.resources)
    entries = [e for e in entries_all if e.startswith("softmax_s5")]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"# {torch.cuda.get_device_name(0)} M={args.M}, median of {args.runs}, L2 flushed; ratio = copy time / kernel time")
    print(f"{'entry':36s} {'N':>6s} {'us':>8s} {'x copy':>7s} {'regs':>5s} {'maxerr':>9s}")

    def shape(M, N, td):
        """Input, its fp32 softmax and the copy time of its bytes."""
        x = torch.randn(M, N, device="cuda").to(td)
        src = torch.empty(x.numel() * x.element_size(), dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        return x, torch.softmax(x.float(), -1), summarize(timer.time(lambda: dst.copy_(src)).times_ms).median_ms

    def trial(e, label, x, ref, copy_ms, grid, block, best):
        """Check then time one entry on x; print its line; the better of best and it."""
        fn = cd.function(res.cubin, e)
        y = torch.full_like(x, float("nan"))
        params, keep = cd.kernel_params(
            [np.uint64(x.data_ptr()), np.uint64(y.data_ptr()), np.int32(x.shape[0]), np.int32(x.shape[1])])

        def go():
            # torch's stream at call time: a CUDA graph captures on a stream of its own
            cd.launch(fn, grid, block, params, 0, torch.cuda.current_stream().cuda_stream, e)

        go()
        torch.cuda.synchronize()
        err = (y.float() - ref).abs().max().item()
        r = copy_ms / summarize(timer.time(go).times_ms).median_ms
        print(f"{label:36s} {x.shape[1]:6d} {copy_ms / r * 1e3:8.1f} {r:7.3f} {res.resources[e].registers:5d} {err:9.2e}")
        return (label, r) if err < 1e-2 and (best is None or r > best[1]) else best

    for tag, td, w in (("f32", torch.float32, 4), ("bf16", torch.bfloat16, 8)):
        if tag not in args.dtype:
            continue
        for N in args.N:
            x, ref, copy_ms = shape(args.M, N, td)
            best = {}  # per variant: S5 (precise math) and S5f (fast math) are tuned apart
            for e in entries:
                m = re.match(rf"softmax_(s5f?)x?_t(\d+)_v(\d+)(?:_l(\d)_e(\d)_p(\d))?(?:_m\d)?_{tag}$", e)
                if not m:
                    continue
                variant, tpr, vecs = m.group(1), int(m.group(2)), int(m.group(3))
                persistent = m.group(6) == "1"
                if not N <= tpr * vecs * w < 2 * N:
                    continue  # too small, or twice too large (more threads idle than working)
                rows = max(1, 256 // tpr)
                groups = -(-args.M // rows)
                for grid_n in ([sms * k for k in (2, 4, 8) if sms * k < groups] if persistent else [groups]):
                    label = f"{e}/g{grid_n}" if persistent else e
                    best[variant] = trial(e, label, x, ref, copy_ms, (grid_n,), (tpr * rows,), best.get(variant))
            for variant, b in sorted(best.items()):
                print(f"best {variant} {tag} N={N}: {b}")
    if args.vocab.lower() not in ("", "none"):
        vm, vn = (int(v) for v in args.vocab.lower().split("x"))
        for tag, td, w in (("f32", torch.float32, 4), ("bf16", torch.bfloat16, 8)):
            if tag not in args.dtype:
                continue
            x, ref, copy_ms = shape(vm, vn, td)
            best = None
            for e in entries_all:
                m = re.match(rf"softmax_cluster_c(\d+)_t(\d+)_v(\d+)_{tag}$", e)
                if not m:
                    continue
                cl, threads, vecs = (int(g) for g in m.groups())
                if cl * threads * vecs * w >= vn:
                    best = trial(e, e, x, ref, copy_ms, (vm * cl,), (threads,), best)
            print(f"best cluster {tag} {vm}x{vn}: {best}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
