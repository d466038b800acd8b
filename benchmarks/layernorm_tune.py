"""Every cuda-layernorm-rows configuration of kernels/cuda/layernorm_rows.cu (built with -DKV_LN_TUNE: threads per
row, 16-byte vectors a thread, cache hints of x's loads and y's stores, minimum blocks per SM; the strided rowsp
entries at 2-6 blocks per SM and at 4 / 8 / 16 row groups a block) at every shape, timed like `verifier bench` (L2 flushed, CUDA events, median) next to the copy of the same bytes, after a check
against torch's layer_norm in float32. The table entries (layernorm_rows_t*_v*_<io>) are timed too. Picks the
size-class tables LN_ROWS_16 / LN_ROWS_32 of layernorm_rows.cu and ROWS_16 / ROWS_32 of layernorm_rows_spec.py.

    python benchmarks/layernorm_tune.py [--N 1024 2048 4096 8192] [--M 8192] [--runs 30] [--dtype bf16 f16 f32]
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
    ap.add_argument("--N", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--dtype", nargs="+", default=["bf16", "f16", "f32"])
    args = ap.parse_args(argv)
    import numpy as np
    import torch

    from verifier.bench.plan import summarize
    from verifier.bench.timing import NO_GPU, Timer, copy_buffers, gpu_available
    from verifier.gpu import libcuda as cd
    from verifier.gpu.probe import device_arch
    from verifier.toolchain.nvcc import compile_cubin

    if not gpu_available():
        print(NO_GPU[0], file=sys.stderr)
        return 2
    from verifier.declare.registry import load_spec_file

    spec = next(k for k in load_spec_file(str(ROOT / "kernels/cuda/layernorm_rows_spec.py"))
                if k.name == "cuda-layernorm-rows")
    res = compile_cubin(ROOT / "kernels/cuda/layernorm_rows.cu", arch=device_arch(), defines={"KV_LN_TUNE": 1})
    timer = Timer(args.runs, 3)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"# {torch.cuda.get_device_name(0)} M={args.M}, median of {args.runs}, L2 flushed; "
          f"ratio = copy time / kernel time; h: cache hints (layernorm_rows.cu HINT); m: min blocks per SM")
    print(f"{'entry':40s} {'N':>6s} {'us':>8s} {'x copy':>7s} {'regs':>5s} {'spill':>5s} {'maxerr':>9s}")
    eps = 1e-5

    for tag, td, width in (("f32", torch.float32, 4), ("f16", torch.float16, 8), ("bf16", torch.bfloat16, 8)):
        if tag not in args.dtype:
            continue
        for N in args.N:
            M = args.M
            x = torch.randn(M, N, device="cuda").to(td)
            w = (1 + 0.1 * torch.randn(N, device="cuda")).to(td)
            b = (0.1 * torch.randn(N, device="cuda")).to(td)
            ref = torch.nn.functional.layer_norm(x.float(), (N,), w.float(), b.float(), eps)
            src, dst = copy_buffers(2 * x.numel() * x.element_size())  # the bench's baseline: x read, y written
            copy_ms = summarize(timer.time(lambda: dst.copy_(src), lambda ret: [dst]).times_ms).median_ms
            best = None

            def run_one(e, m, fn, grid, tpr, rows, N, best):
                """Check and time entry ``e`` at ``grid`` blocks; the better of it and ``best``."""
                y = torch.full_like(x, float("nan"))
                params, keep = cd.kernel_params(
                    [np.uint64(x.data_ptr()), np.uint64(w.data_ptr()), np.uint64(b.data_ptr()),
                     np.uint64(y.data_ptr()), np.int32(M), np.int32(N), np.float32(eps), np.int64(N), np.int64(N)])

                def go():
                    # torch's stream at call time: a CUDA graph captures on a stream of its own
                    cd.launch(fn, (grid,), (tpr * rows,), params, 0, torch.cuda.current_stream().cuda_stream, e)

                go()
                torch.cuda.synchronize()
                err = (y.float() - ref).abs().max().item()
                ms = summarize(timer.time(go).times_ms).median_ms
                r = copy_ms / ms
                rs = res.resources[e]
                label = (e if m.group(1) else e + " (table)") + (f" g{grid}" if m.group(1) == "p" else "")
                print(f"{label:40s} {N:6d} {ms * 1e3:8.1f} {r:7.3f} {rs.registers:5d} {rs.spill_store_bytes:5d} {err:9.2e}")
                if err < 0.05 and (best is None or r > best[1]):
                    best = (label, r)
                return best
            for e in sorted(res.resources):
                m = re.match(rf"layernorm_rows([xp]?)_t(\d+)_v(\d+)(?:_h(\d))?(?:_m(\d))?_{tag}$", e)
                if not m:
                    continue
                tpr, vecs = int(m.group(2)), int(m.group(3))
                if not N <= tpr * vecs * width < 2 * N:
                    continue  # too small, or twice too large (more threads idle than working)
                rows = max(1, 256 // tpr)  # rows a block
                fn = cd.function(res.cubin, e)
                # persistent entries (rowsp), each block striding over the row groups: k blocks per SM, or R groups a
                # block (a grid that does not depend on the GPU)
                groups = -(-M // rows)
                grids = sorted({sms * k for k in (2, 3, 4, 5, 6)} | {-(-groups // r) for r in (4, 8, 16)})
                if not m.group(1):  # a table entry: the spec's grid (its strided classes take fewer blocks)
                    grids = [spec.launches(M, N, next(d for d in spec.dtypes if d.tag == tag), None)[0].grid[0]]
                for grid in (grids if m.group(1) in ("p", "") else [groups]):
                    best = run_one(e, m, fn, grid, tpr, rows, N, best)
            print(f"best {tag} N={N}: {best}  (copy {copy_ms * 1e3:.1f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
