"""Is it torch or the aliasing? torch's own rms_norm / layer_norm on real (not aliased) CUDA tensors past 2^31 and
2^32 elements, the last rows compared with a float64 reference of those rows (issue #36, run 3).

    python benchmarks/torch_norm_past_2pow32.py
"""
import torch

N = 16384
for wrap in (2 ** 31, 2 ** 32):
    M = wrap // N + 64
    for name in ("rms_norm", "layer_norm"):
        torch.manual_seed(0)
        x = torch.randn(M, N, dtype=torch.bfloat16, device="cuda")
        fn = getattr(torch.nn.functional, name)
        y = fn(x, (N,))
        for r in (0, wrap // N - 1, wrap // N, M - 1):
            ref = fn(x[r:r + 1].double(), (N,)).to(torch.bfloat16)
            bad = (y[r:r + 1].float() - ref.float()).abs().max().item()
            print(f"{name} M={M} N={N} (numel {M * N}, past 2^{wrap.bit_length() - 1}) row {r}: max |y - ref| = "
                  f"{bad:.4g}", flush=True)
        del x, y
        torch.cuda.empty_cache()
