// Two ops kernel-verifier does not bundle, declared in ops_spec.py beside this file: a row abs-max and an L2 norm.
// One block per row, 256 threads, a strided loop over the row, a warp shuffle reduction, then one value per warp
// through shared memory. The *_bug entries are the defects the worked example in docs/specs.md shows.
#include <cuda_bf16.h>
#include <math.h>

#define THREADS 256
#define WARPS (THREADS / 32)

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// A max that keeps NaN, as torch.amax does (fmaxf would drop it: a row holding NaN would report its largest number).
__device__ __forceinline__ float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }

template <bool kMax>
__device__ __forceinline__ float combine(float a, float b) { return kMax ? nan_max(a, b) : a + b; }

// Every thread gets the block's result. kSync = false drops the barrier between the shared-memory writes and the
// reads (the lint defect).
template <bool kMax, bool kSync>
__device__ float block_reduce(float v, float* smem) {
    for (int off = 16; off > 0; off >>= 1) v = combine<kMax>(v, __shfl_xor_sync(0xffffffffu, v, off));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) smem[warp] = v;
    if (kSync) __syncthreads();
    v = lane < WARPS ? smem[lane] : (kMax ? 0.0f : 0.0f);
    for (int off = 16; off > 0; off >>= 1) v = combine<kMax>(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

// y[r] = max_j |x[r, j]|; kTail = false stops at the last multiple of 4 (the value defect: a row's tail is skipped).
template <typename T, bool kSync, bool kTail>
__device__ void row_amax(const T* x, T* y, int N, long long sx) {
    __shared__ float smem[WARPS];
    const T* row = x + blockIdx.x * sx;
    const int end = kTail ? N : N & ~3;
    float m = 0.0f;
    for (int j = threadIdx.x; j < end; j += THREADS) m = nan_max(m, fabsf(load(row + j)));
    m = block_reduce<true, kSync>(m, smem);
    if (threadIdx.x == 0) store(y + blockIdx.x, m);
}

// y = x / max(||x||, eps); kEps = false divides by the norm itself (the defect: a zero row gives NaN).
template <typename T, bool kEps>
__device__ void l2norm(const T* x, T* y, int N, float eps, long long sx, long long sy) {
    __shared__ float smem[WARPS];
    const T* in = x + blockIdx.x * sx;
    T* out = y + blockIdx.x * sy;
    float s = 0.0f;
    for (int j = threadIdx.x; j < N; j += THREADS) { float v = load(in + j); s += v * v; }
    s = block_reduce<false, true>(s, smem);
    const float norm = sqrtf(s);
    const float inv = 1.0f / (kEps && norm < eps ? eps : norm);  // not fmaxf: a NaN norm must stay NaN
    for (int j = threadIdx.x; j < N; j += THREADS) store(out + j, load(in + j) * inv);
}

#define ENTRIES(T, tag)                                                                                              \
    extern "C" __global__ void __launch_bounds__(THREADS) row_amax_##tag(const T* x, T* y, int N, long long sx) {   \
        row_amax<T, true, true>(x, y, N, sx);                                                                        \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(THREADS) row_amax_nosync_bug_##tag(const T* x, T* y, int N,        \
                                                                                     long long sx) {                 \
        row_amax<T, false, true>(x, y, N, sx);                                                                       \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(THREADS) row_amax_notail_bug_##tag(const T* x, T* y, int N,        \
                                                                                     long long sx) {                 \
        row_amax<T, true, false>(x, y, N, sx);                                                                       \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(THREADS) l2norm_##tag(const T* x, T* y, int N, float eps,          \
                                                                       long long sx, long long sy) {                 \
        l2norm<T, true>(x, y, N, eps, sx, sy);                                                                       \
    }                                                                                                                \
    extern "C" __global__ void __launch_bounds__(THREADS) l2norm_noeps_bug_##tag(const T* x, T* y, int N, float eps, \
                                                                                  long long sx, long long sy) {      \
        l2norm<T, false>(x, y, N, eps, sx, sy);                                                                      \
    }

ENTRIES(float, f32)
ENTRIES(__nv_bfloat16, bf16)
