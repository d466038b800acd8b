"""FlashInfer's sampling top-k filters (flashinfer-python==0.7.4, topk.cuh): ``top_k_renorm_probs`` and
``top_k_mask_logits`` as ops top_k_renorm_probs / top_k_mask_logits. Its radix select finds the exact k-th largest
(a positive NaN ordered largest) and keeps every element >= it (ties='keep_all'); k >= N copies or renormalizes the
whole row; the renorm divides by max(sum, 1e-8f) (sum_floor) through rcp.approx. Launched as its host code launches
the single-CTA kernels (sampling_topk.cu): 1024 threads, VEC_SIZE = gcd(16 / sizeof(T), N), the row's ordered keys
in dynamic shared memory after 2080 bytes, one CTA per SM looping over the rows (an H200's 132). Rows past one
block's shared memory take its multi-CTA path (a grid barrier): refused past 40,000 elements, which fit sm_80's
163 KB and sm_90's 227 KB in f32 (not sm_86 / sm_89's 99 KB: f32 rows past about 24,800 fail to launch there). Its row offset
``row_idx * vocab_size`` is uint32 arithmetic: past 2^32 elements it wraps (read from topk.cuh, not yet run: expected
as a true finding on large_index_2pow32)."""
from math import gcd

from verifier.spec import Contracts, CudaKernel, Expectations, Launch, Pointer, Scalar, ctype, dtypes, max_row

from flashinfer_spec import FLAGS, INCLUDE, REQUIRES  # noqa: E402 (this folder's own module)

SUM_FLOOR = 9.99999993922529e-09  # 1e-8f, the float32 its renorm clamps the kept sum to
SPILL = Expectations(max_spill_bytes=32, max_stack_bytes=16)  # the renorm at 1024 threads (64 registers), as ptxas says


def _launches(entry, flags, out):
    def launches(M, N, dt, p):
        size = 4 if dt.input == "float32" else 2
        vec = gcd(16 // size, N)
        chunk = -(-N // vec) * vec  # round_up(ceil_div(N, 1 CTA), VEC_SIZE)
        return [Launch(f"flashinfer::sampling::{entry}<1024u, {vec}u, {flags}, {ctype(dt.input)}, int>",
                       (min(M, 132),), (1024,), ("x", out, Pointer(None), Scalar("uint32", p["k"]),
                                                 Scalar("uint32", "N"), Scalar("uint32", "M"), Pointer(None),
                                                 Scalar("uint32", chunk), Scalar("uint32", 1)), smem=2080 + chunk * size)]
    return launches


_COMMON = dict(source="sampling_topk.cu", include_dirs=INCLUDE, extra_flags=FLAGS, requires=REQUIRES, math_mode="fast",
               dtypes=[dtypes("f32"), dtypes("bf16")], contracts=Contracts(layout="contiguous", alignment=16),
               supports=max_row(40000, what="FlashInfer's single-CTA path (shared memory)"))
KERNELS = [
    CudaKernel(name=f"flashinfer-top-k-renorm-probs-k{k}", op="top_k_renorm_probs", **_COMMON,
               launches=_launches("RadixTopKRenormProbKernel_MultiCTA", "true, false", "renormed"),
               params={"k": k, "sum_floor": SUM_FLOOR}, expectations=SPILL,
               description=f"flashinfer.sampling.top_k_renorm_probs(probs, {k})")
    for k in (1, 8)
] + [
    CudaKernel(name="flashinfer-top-k-mask-logits", op="top_k_mask_logits", **_COMMON, params={"k": 8},
               launches=_launches("RadixTopKMaskLogitsKernel_MultiCTA", "true", "masked"),
               description="flashinfer.sampling.top_k_mask_logits(logits, 8)"),
]
