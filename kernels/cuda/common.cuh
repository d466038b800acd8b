// Shared helpers for the bundled kernels: dtype conversion and warp/block reductions.
// Kernels pick their I/O types with -DT_IN=... -DT_OUT=... -DT_ACC=... (see each spec.py).
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#ifndef T_IN
#define T_IN float
#endif
#ifndef T_OUT
#define T_OUT T_IN
#endif
#ifndef T_ACC
#define T_ACC float
#endif

namespace kv {

// ---- conversions: every type to and from float ------------------------------------------
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__nv_fp8_e4m3 v) { return float(v); }
__device__ __forceinline__ float to_float(__nv_fp8_e5m2 v) { return float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// ---- warp reductions (full 32-lane warp; callers guarantee all lanes are active) ---------
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Block-wide sum for blockDim.x a multiple of 32 (<= 1024). `scratch` holds 32 floats.
// The leading __syncthreads makes back-to-back calls safe: the second call's writes to
// scratch cannot overtake the first call's reads.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    v = (lane < nwarps) ? scratch[lane] : 0.f;
    return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    v = (lane < nwarps) ? scratch[lane] : -INFINITY;
    return warp_max(v);
}

// 16-byte vectors: W = 16 / sizeof(T) elements, as raw bits or as elements.
template <typename T>
struct Vec16 {
    static constexpr int W = 16 / sizeof(T);
    union U {
        uint4 raw;
        T e[W];
    };
};

}  // namespace kv
