// A row's absolute maximum through a reduction sized for 1024 threads, launched with min(N, 1024) threads (vLLM's
// dynamic_scaled_int8_quant does so). Without a valid count, thread 0 folds the partials of all 32 warps: at
// 64 threads, 30 of them were never written. A hand-written twin of the same shape, and the valid-count form.
#include <cub/cub.cuh>

struct Max { __device__ float operator()(float a, float b) const { return b > a ? b : a; } };

template <bool VALID_COUNT>
__device__ void row_amax(const float* x, float* y, int n) {
    float m = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, fabsf(x[(long long)blockIdx.x * n + i]));
    using Reduce = cub::BlockReduce<float, 1024>;
    __shared__ typename Reduce::TempStorage tmp;
    m = VALID_COUNT ? Reduce(tmp).Reduce(m, Max(), blockDim.x) : Reduce(tmp).Reduce(m, Max());
    if (threadIdx.x == 0) y[blockIdx.x] = m;
}
extern "C" __global__ void amax_full_tile(const float* x, float* y, int n) { row_amax<false>(x, y, n); }
extern "C" __global__ void amax_valid_count(const float* x, float* y, int n) { row_amax<true>(x, y, n); }

// the hand-written form: every warp's lane 0 writes its slot, thread 0 reads all 32
extern "C" __global__ void amax_all_slots(const float* x, float* y, int n) {
    __shared__ float part[32];
    float m = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, fabsf(x[(long long)blockIdx.x * n + i]));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
#pragma unroll
        for (int w = 1; w < 32; ++w) m = fmaxf(m, part[w]);
        y[blockIdx.x] = m;
    }
}
// the guarded form: only the slots of warps that exist are read
extern "C" __global__ void amax_guarded(const float* x, float* y, int n) {
    __shared__ float part[32];
    float m = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, fabsf(x[(long long)blockIdx.x * n + i]));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        m = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
        if (threadIdx.x == 0) y[blockIdx.x] = m;
    }
}
