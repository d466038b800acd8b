// FlashInfer's RMSNorm + static-scale fp8 quantization (RMSNormQuantKernel) and its fused-add sibling
// (FusedAddRMSNormQuantKernel), instantiated from the headers of the
// installed flashinfer-python wheel (include_dirs: package_path("flashinfer", "data", "include")); nothing of
// FlashInfer is copied here. Its host code picks VEC_SIZE = gcd(16 / sizeof(T), d): every size is instantiated.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <flashinfer/norm.cuh>

#define FI_NQ(V, T, O)                                                                                        \
  template __global__ void flashinfer::norm::RMSNormQuantKernel<V, T, O>(T*, T*, O*, const uint32_t,          \
                                                                         const uint32_t, const uint32_t,      \
                                                                         float, float*, float);
#define FI_NQ_ALL(T, O) FI_NQ(1, T, O) FI_NQ(2, T, O) FI_NQ(4, T, O) FI_NQ(8, T, O)

FI_NQ_ALL(__nv_bfloat16, __nv_fp8_e4m3)
FI_NQ_ALL(__half, __nv_fp8_e4m3)
FI_NQ_ALL(__nv_bfloat16, __nv_fp8_e5m2)

#define FI_ANQ(V, T, O)                                                                                       \
  template __global__ void flashinfer::norm::FusedAddRMSNormQuantKernel<V, T, O>(                            \
      T*, T*, T*, O*, const uint32_t, const uint32_t, const uint32_t, const uint32_t, float, float*, float);
#define FI_ANQ_ALL(T, O) FI_ANQ(1, T, O) FI_ANQ(2, T, O) FI_ANQ(4, T, O) FI_ANQ(8, T, O)

FI_ANQ_ALL(__nv_bfloat16, __nv_fp8_e4m3)
FI_ANQ_ALL(__half, __nv_fp8_e4m3)
