// FlashInfer's sampling softmax (flashinfer.sampling.softmax: a row softmax of logits / temperature), the one-pass
// kernel its host code launches for every batch outside "small batch, large vocabulary", instantiated from the
// installed wheel's headers; nothing of FlashInfer is copied here. Its host code runs 1024 threads on sm_80+ and
// VEC_SIZE = gcd(16 / sizeof(float), d); CACHE_INPUT keeps the scaled row in shared memory (M <= 16 and d <= 4096,
// M <= 32 and d <= 2048).
#include <flashinfer/sampling.cuh>

#define FI_SOFTMAX(V, CACHE)                                                                                    \
  template __global__ void flashinfer::sampling::OnlineSoftmaxFusedKernel<1024, V, float, CACHE>(             \
      float*, float*, float*, float, uint32_t);

FI_SOFTMAX(1, false) FI_SOFTMAX(2, false) FI_SOFTMAX(4, false)
FI_SOFTMAX(1, true) FI_SOFTMAX(2, true) FI_SOFTMAX(4, true)
