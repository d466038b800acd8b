// Defects of the four classes `verifier lint` checks statically (f32 RMSNorm, 256-thread blocks, one block
// per row), each next to its correct form. Two of them are ones compute-sanitizer was measured to miss on
// the H200 (docs/static-vs-sanitizers.md): the cross-block race on a global workspace (racecheck checks
// shared memory only) and the full-mask shuffle with inactive lanes.
//   rms_small_{ok,early_exit}_f32: one element per thread (N <= 256). The defect returns early for
//     t >= N, then calls the block reduce: its barriers and full-mask shuffles run without the exited
//     threads (divergent barrier after a thread-dependent exit).
//   rms_tree_first_sync_missing_f32: the shared-memory tree reduction without the barrier between each
//     thread's store of its partial and the first stage's read of another thread's (RAW).
//   rms_guarded_shfl_f32: block reduce whose second level runs warp_sum (mask 0xffffffff) only in the
//     lanes that hold a warp partial, `if (lane < nwarps)`: lanes 8..31 are inactive (shuffle with
//     inactive lanes). Twin: kernels/defects/cuda/sync_defects.cu rms_block_ok_f32 (kv::block_sum).
//   rms_global_scratch_{ok,shared_by_blocks}_f32: the warp partials go through a global workspace; the
//     defect indexes it by warp only, so every block of the grid writes the same 8 floats (a cross-block
//     race; values come out wrong only when blocks overlap in time). The twin offsets it by blockIdx.x.
#include "../../cuda/common.cuh"

#define THREADS 256

namespace {

__device__ __forceinline__ float rstd_of(float ss, int N, float eps) { return 1.0f / sqrtf(ss / (float)N + eps); }

template <bool EARLY_EXIT>
__device__ void rms_small(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
                          float eps) {
    __shared__ float scratch[32];
    const int t = threadIdx.x;
    if (EARLY_EXIT && t >= N) return;  // "nothing to do for this thread" - but the block reduce needs it
    const float v = t < N ? x[(size_t)blockIdx.x * N + t] : 0.f;
    const float r = rstd_of(kv::block_sum(v * v, scratch), N, eps);
    if (t < N) y[(size_t)blockIdx.x * N + t] = v * r * w[t];
}

__device__ void rms_tree_first_sync_missing(const float* __restrict__ x, const float* __restrict__ w,
                                            float* __restrict__ y, int N, float eps) {
    __shared__ float s[THREADS];
    const int t = threadIdx.x;
    const float* xr = x + (size_t)blockIdx.x * N;
    float ss = 0.f;
    for (int i = t; i < N; i += THREADS) ss = fmaf(xr[i], xr[i], ss);
    s[t] = ss;
    // missing: __syncthreads();  (stage 128 reads s[t + 128], written by another warp)
    for (int st = THREADS / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    const float r = rstd_of(s[0], N, eps);
    for (int i = t; i < N; i += THREADS) y[(size_t)blockIdx.x * N + i] = xr[i] * r * w[i];
}

__device__ __forceinline__ float block_sum_guarded_shfl(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = kv::warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    float total = 0.f;
    if (lane < nwarps) total = kv::warp_sum(scratch[lane]);  // full mask, but lanes >= nwarps are elsewhere
    return __shfl_sync(0xffffffffu, total, 0);
}

__device__ void rms_guarded_shfl(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                 int N, float eps) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * N;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    const float r = rstd_of(block_sum_guarded_shfl(ss, scratch), N, eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x) y[(size_t)blockIdx.x * N + i] = xr[i] * r * w[i];
}

// Warp partials through a global workspace `part` (the spec passes 32 floats per row).
template <bool PER_BLOCK>
__device__ void rms_global_scratch(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                   float* part, int N, float eps) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float* xr = x + (size_t)blockIdx.x * N;
    float* mine = PER_BLOCK ? part + (size_t)blockIdx.x * 32 : part;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    ss = kv::warp_sum(ss);
    if (lane == 0) mine[warp] = ss;
    __syncthreads();  // orders this block's global writes before its reads; other blocks are not ordered
    const int nwarps = (blockDim.x + 31) >> 5;
    ss = kv::warp_sum(lane < nwarps ? mine[lane] : 0.f);
    const float r = rstd_of(ss, N, eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x) y[(size_t)blockIdx.x * N + i] = xr[i] * r * w[i];
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
    rms_small_ok_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_small<false>(x, w, y, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_small_early_exit_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_small<true>(x, w, y, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_tree_first_sync_missing_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_tree_first_sync_missing(x, w, y, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_guarded_shfl_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_guarded_shfl(x, w, y, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_global_scratch_ok_f32(const float* x, const float* w, float* y, float* part, int M, int N, float eps) {
    rms_global_scratch<true>(x, w, y, part, N, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_global_scratch_shared_by_blocks_f32(const float* x, const float* w, float* y, float* part, int M, int N,
                                            float eps) {
    rms_global_scratch<false>(x, w, y, part, N, eps);
}
