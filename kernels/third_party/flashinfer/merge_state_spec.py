"""FlashInfer's MergeStateKernel (flashinfer-python==0.7.4, attention/cascade.cuh) as op merge_attn_states: lse in
base 2 (FlashInfer's log2-sum-exp2 states), two empty states give v = 0 and lse = -inf (its max() and d_sum > 0
guards; declared as NaN until an H100 run on 2026-12-05 showed the zeros), -use_fast_math (ex2.approx,
lg2.approx) as its JIT builds it. Launched as its host MergeState launches it, one head per row: grid (M,), block
(head_dim / vec_size, 1). Its sampling top-k kernels (topk.cuh: renormalized probabilities, masked logits, no values
and indices) are ops of their own, top_k_renorm_probs and top_k_mask_logits (sampling_topk_spec.py)."""
from verifier.spec import FLOAT_IO, Contracts, CudaKernel, Launch, Scalar, ctype, register_resident

from flashinfer_spec import FLAGS, INCLUDE, REQUIRES  # noqa: E402 (this folder's own module)

HEAD_DIMS = (64, 128, 256, 512)  # FlashInfer's DISPATCH_HEAD_DIM


def _launches(M, N, dt, p):
    vec = max(16 // (4 if dt.input == "float32" else 2), N // 32)
    return [Launch(f"flashinfer::MergeStateKernel<{vec}, {ctype(dt.input)}, {ctype(dt.input)}>", (M,), (N // vec, 1),
                   ("x", "lse_a", "v_b", "lse_b", "v", "lse", Scalar("uint32", 1), "N"))]


KERNELS = [
    CudaKernel(name="flashinfer-merge-state", op="merge_attn_states", source="cascade.cu", dtypes=FLOAT_IO,
               launches=_launches, params={"lse_base": "2", "empty": "zero"}, include_dirs=INCLUDE, extra_flags=FLAGS,
               requires=REQUIRES, math_mode="fast", expectations=register_resident(),
               contracts=Contracts(alignment=16),
               supports=lambda M, N, dt: None if N in HEAD_DIMS else f"head_dim N={N} not in {HEAD_DIMS}"),
]
