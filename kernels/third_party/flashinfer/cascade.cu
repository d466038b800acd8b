// FlashInfer's MergeStateKernel (attention/cascade.cuh: two partial attention states with base-2 lse merged),
// instantiated from the headers of the installed flashinfer-python wheel; nothing of FlashInfer is copied here.
// Its host code (MergeState) picks vec_size = max(16 / sizeof(T), head_dim / 32) for head_dim 64..512: every
// size it can pick is instantiated, output dtype = input dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <flashinfer/attention/cascade.cuh>

#define FI_MERGE(V, T)                                                                                    \
  template __global__ void flashinfer::MergeStateKernel<V, T, T>(T*, float*, T*, float*, T*, float*,     \
                                                                 uint32_t, uint32_t);

FI_MERGE(4, float)
FI_MERGE(8, float)
FI_MERGE(16, float)
FI_MERGE(8, __half)
FI_MERGE(16, __half)
FI_MERGE(8, __nv_bfloat16)
FI_MERGE(16, __nv_bfloat16)
