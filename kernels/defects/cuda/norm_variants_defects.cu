// Defective row abs-max kernels (issue #37) and the split twin written here; the block-per-row twin is
// kernels/cuda/norm_variants.cu's row_amax.
//   row_amax_fmaxf_<tag>: one block per row, max |x| with fmaxf: fmaxf(m, NaN) = m, so a NaN in the row is dropped
//     and the largest number reported (torch.amax gives NaN): a quantizer's scale silently finite.
//   row_amax_split_f32 / row_amax_split_nosync_f32 (+ row_amax_split_zero_f32 first): the row split over blocks of
//     SPLIT columns; each block reduces its columns (warp shuffles, then the warp partials through shared memory)
//     and merges into y[row] with atomicMax on the float's bits (for |x| >= 0 and NaN the unsigned order is the
//     float order, NaN above +inf: NaN wins, order-independent, deterministic). The nosync variant lets thread 0
//     read the other warps' partials without the barrier: a shared-memory race across the block's warps.
#include "../../cuda/common.cuh"

#define THREADS 256

__device__ __forceinline__ float keep_nan_max(float a, float b) { return (b > a || b != b) ? b : a; }

template <typename T>
__device__ void amax_fmaxf(const T* x, T* y, int N, long long sx) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    float m = 0.f;
    for (int j = threadIdx.x; j < N; j += THREADS) m = fmaxf(m, fabsf(kv::to_float(xr[j])));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; ++w) m = fmaxf(m, scratch[w]);
        y[blockIdx.x] = kv::from_float<T>(m);
    }
}

template <bool kSync>
__device__ void amax_split(const float* x, float* y, int N, long long sx) {
    __shared__ float scratch[32];
    const int chunk = (N + gridDim.y - 1) / gridDim.y;
    const int lo = blockIdx.y * chunk, hi = min(N, lo + chunk);
    const float* xr = x + (long long)blockIdx.x * sx;
    float m = 0.f;
    for (int j = lo + threadIdx.x; j < hi; j += THREADS) m = keep_nan_max(m, fabsf(xr[j]));
    for (int o = 16; o > 0; o >>= 1) m = keep_nan_max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = m;
    if (kSync) __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; ++w) m = keep_nan_max(m, scratch[w]);
        atomicMax(reinterpret_cast<unsigned int*>(y + blockIdx.x), __float_as_uint(m));
    }
}

#define KV_AMAX_FMAXF(TAG, T)                                                                                    \
    extern "C" __global__ void __launch_bounds__(THREADS) row_amax_fmaxf_##TAG(const T* x, T* y, int N,          \
                                                                                 long long sx) {                 \
        amax_fmaxf<T>(x, y, N, sx);                                                                              \
    }
KV_AMAX_FMAXF(f32, float)
KV_AMAX_FMAXF(f16, __half)
KV_AMAX_FMAXF(bf16, __nv_bfloat16)

extern "C" __global__ void row_amax_split_zero_f32(float* __restrict__ y, int M) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M) y[r] = 0.f;
}

extern "C" __global__ void __launch_bounds__(THREADS) row_amax_split_f32(const float* x, float* y, int N,
                                                                          long long sx) {
    amax_split<true>(x, y, N, sx);
}

extern "C" __global__ void __launch_bounds__(THREADS) row_amax_split_nosync_f32(const float* x, float* y, int N,
                                                                                 long long sx) {
    amax_split<false>(x, y, N, sx);
}
