// FlashInfer's sampling top-k filters (flashinfer.sampling.top_k_renorm_probs / top_k_mask_logits, topk.cuh of the
// installed flashinfer-python wheel): the single-CTA instantiations of RadixTopKRenormProbKernel_MultiCTA and
// RadixTopKMaskLogitsKernel_MultiCTA, as RadixTopKRenormProbMultiCTA / RadixTopKMaskLogitsMultiCTA pick them when a
// row fits one block's shared memory. Nothing of FlashInfer is copied here. Its host code runs 1024 threads and
// VEC_SIZE = gcd(16 / sizeof(DType), vocab_size); the single-CTA renorm is the non-deterministic-flag one (it has no
// cross-CTA sum); top_k_arr is int32 (nullptr here: one k for every row).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <flashinfer/sampling.cuh>  // topk.cuh, after the math.cuh it needs (as FlashInfer's own build has it)

using flashinfer::sampling::RadixRowState;

#define FI_TOPK(V, T)                                                                                              \
  template __global__ void flashinfer::sampling::RadixTopKRenormProbKernel_MultiCTA<1024, V, true, false, T,      \
                                                                                    int32_t>(                     \
      T*, T*, int32_t*, uint32_t, uint32_t, uint32_t, RadixRowState*, uint32_t, uint32_t);                         \
  template __global__ void flashinfer::sampling::RadixTopKMaskLogitsKernel_MultiCTA<1024, V, true, T, int32_t>(   \
      T*, T*, int32_t*, uint32_t, uint32_t, uint32_t, RadixRowState*, uint32_t, uint32_t);

FI_TOPK(1, float) FI_TOPK(2, float) FI_TOPK(4, float)
FI_TOPK(1, __nv_bfloat16) FI_TOPK(2, __nv_bfloat16) FI_TOPK(4, __nv_bfloat16) FI_TOPK(8, __nv_bfloat16)
