// Barrier defects in block reductions (f32 I/O, fp32 math), each next to its correct form.
// Derived from the seed tutorials' block_all_reduce / rms_norm / layer_norm kernels.
//   rms_block_{ok,missing_sync}_f32: RMSNorm, one 256-thread block per row, any N. The defect
//     reads the warp partials from shared memory without the __syncthreads after they are
//     written (racecheck: write by lane 0 of warp w vs read by every thread).
//   ln_twice_no_barrier_f32_e4: two-pass LayerNorm (mean, then variance) calling a block reduce
//     twice; the reduce lacks the barrier BEFORE its write, so the second call's scratch writes
//     race with the first call's reads (racecheck). Twin: kernels/cuda/layernorm.cu (kv::block_sum).
//   rms_tree_{ok,divergent}_f32: RMSNorm with the seed's shared-memory tree reduction; the defect
//     puts __syncthreads inside `if (t < st)`, a barrier in a thread-dependent branch whose other
//     lanes are alive and keep looping (synccheck).
#include "../../cuda/common.cuh"

#define THREADS 256

namespace {

// Block sum with the barrier between the partials' write and their read missing.
__device__ __forceinline__ float block_sum_missing_sync(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = kv::warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    // missing: __syncthreads();
    v = (lane < (int)(blockDim.x >> 5)) ? scratch[lane] : 0.f;
    return kv::warp_sum(v);
}

// The textbook block sum: barrier after the write only. Safe once, racy when called twice on
// the same scratch (a fast warp's second write overtakes a slow warp's first read).
__device__ __forceinline__ float block_sum_no_leading_barrier(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = kv::warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < (int)(blockDim.x >> 5)) ? scratch[lane] : 0.f;
    return kv::warp_sum(v);
}

template <bool MISSING_SYNC>
__device__ void rms_block(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
                          float eps) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    ss = MISSING_SYNC ? block_sum_missing_sync(ss, scratch) : kv::block_sum(ss, scratch);
    const float rstd = 1.0f / sqrtf(ss / (float)N + eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x) yr[i] = xr[i] * rstd * w[i];
}

template <int E>
__device__ void ln_twice_no_barrier(const float* __restrict__ x, const float* __restrict__ w,
                                    const float* __restrict__ b, float* __restrict__ y, int N, float eps) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * N;
    float v[E];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * THREADS;
        v[k] = i < N ? xr[i] : 0.f;
        s += v[k];
    }
    const float mean = block_sum_no_leading_barrier(s, scratch) / (float)N;
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * THREADS;
        const float d = v[k] - mean;
        if (i < N) ss = fmaf(d, d, ss);
    }
    const float rstd = 1.0f / sqrtf(block_sum_no_leading_barrier(ss, scratch) / (float)N + eps);
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * THREADS;
        if (i < N) y[(size_t)blockIdx.x * N + i] = fmaf((v[k] - mean) * rstd, w[i], b[i]);
    }
}

// Shared-memory tree reduction (seed 000, reduction v2), then normalize. The defect moves the
// barrier inside `if (t < st)`: from st = 16 down, lanes of warp 0 split between the barrier and
// the loop's next step while the rest of the warp is still running (synccheck); threads that
// skipped a barrier also read s[0] before the sum is complete.
template <bool DIVERGENT>
__device__ void rms_tree(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
                         float eps) {
    __shared__ float s[THREADS];
    const int t = threadIdx.x;
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;
    float ss = 0.f;
    for (int i = t; i < N; i += THREADS) ss = fmaf(xr[i], xr[i], ss);
    s[t] = ss;
    __syncthreads();
    for (int st = THREADS / 2; st > 0; st >>= 1) {
        if (DIVERGENT) {
            if (t < st) {
                s[t] += s[t + st];
                __syncthreads();  // only the threads still adding wait here
            }
        } else {
            if (t < st) s[t] += s[t + st];
            __syncthreads();
        }
    }
    const float rstd = 1.0f / sqrtf(s[0] / (float)N + eps);
    for (int i = t; i < N; i += THREADS) yr[i] = xr[i] * rstd * w[i];
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
    rms_block_ok_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_block<false>(x, w, y, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_block_missing_sync_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_block<true>(x, w, y, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    ln_twice_no_barrier_f32_e4(const float* x, const float* w, const float* b, float* y, int M, int N, float eps) {
    ln_twice_no_barrier<4>(x, w, b, y, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_tree_ok_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_tree<false>(x, w, y, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_tree_divergent_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_tree<true>(x, w, y, N, eps);
}
