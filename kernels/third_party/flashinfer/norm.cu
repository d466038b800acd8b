// FlashInfer's norm kernels, instantiated from the headers of the installed flashinfer-python wheel
// (include_dirs: package_path("flashinfer", "data", "include")); nothing of FlashInfer is copied here.
// FlashInfer's host code picks VEC_SIZE = gcd(16 / sizeof(T), d); every size it can pick is instantiated.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <flashinfer/norm.cuh>

#define FI_NORM(V, T)                                                                                       \
  template __global__ void flashinfer::norm::RMSNormKernel<V, T>(T*, T*, T*, uint32_t, uint32_t, uint32_t,  \
                                                                 float, float);                             \
  template __global__ void flashinfer::norm::FusedAddRMSNormKernel<V, T>(T*, T*, T*, uint32_t, uint32_t,    \
                                                                         uint32_t, float, float);
#define FI_NORM_ALL(T) FI_NORM(1, T) FI_NORM(2, T) FI_NORM(4, T)

FI_NORM_ALL(float)
FI_NORM_ALL(__half)
FI_NORM(8, __half)
FI_NORM_ALL(__nv_bfloat16)
FI_NORM(8, __nv_bfloat16)
