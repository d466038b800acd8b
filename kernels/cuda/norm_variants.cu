// Norm variants (issue #37): group_norm (with and without affine), row_amax, row_mean, var_mean, l2norm.
// fp32 math, I/O in T (float, __half, __nv_bfloat16), one block of 256 threads per row (group_norm: per row and
// group), a strided loop over the row, kv::block_sum (common.cuh) or a NaN-keeping block max. Any N: the row is
// re-read from memory (L1/L2) for a second pass rather than held in registers.
//
// - group_norm: a row is one sample (C channels x N/C spatial values, channel-major); group g is columns
//   [g*N/G, (g+1)*N/G). Two passes: mean, then sum((x - mean)^2) (no E[x^2] - E[x]^2 cancellation);
//   rstd = 1/sqrtf(var + eps), IEEE; y = (x - mean)*rstd (*w[c] + b[c], c = column / (N/C)).
// - row_amax: max |x| keeping NaN (torch.amax): a compare that lets a NaN operand win, never fmaxf.
// - var_mean: two passes; var = sum((x - mean)^2) / (N - correction): 0/0 = NaN when N == correction (torch).
// - l2norm: y = x / max(||x||, eps), the max written as a compare so that a NaN norm stays NaN.
// - rmsnorm_noweight / layernorm_noweight / layernorm_bias: two passes (layernorm: the mean, then sum((x - mean)^2)),
//   rstd = 1/sqrtf(ms + eps), y = (x - mean)*rstd (+ b[j]).
// Rows of x (and y) lie sx (sy) elements apart: the launches pass the row strides, so views are checked.
#include "common.cuh"

namespace {

constexpr int kThreads = 256;

// b wins when larger or NaN; a NaN a stays (b > NaN is false, and b is not NaN then).
__device__ __forceinline__ float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }

// Block-wide abs-max (values >= 0 or NaN; 0 is the identity). blockDim.x a multiple of 32; scratch: 32 floats.
__device__ float block_nan_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T, bool kAffine>
__device__ void group_norm(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                           T* __restrict__ y, int N, int G, int C, float eps, long long sx, long long sy) {
    __shared__ float scratch[32];
    const long long row = blockIdx.x / G;
    const int g = blockIdx.x % G, gs = N / G, cs = N / C;
    const T* xg = x + row * sx + (long long)g * gs;
    T* yg = y + row * sy + (long long)g * gs;
    float s = 0.f;
    for (int j = threadIdx.x; j < gs; j += blockDim.x) s += kv::to_float(xg[j]);
    const float mean = kv::block_sum(s, scratch) / gs;
    float q = 0.f;
    for (int j = threadIdx.x; j < gs; j += blockDim.x) {
        const float d = kv::to_float(xg[j]) - mean;
        q += d * d;
    }
    const float rstd = 1.f / sqrtf(kv::block_sum(q, scratch) / gs + eps);
    for (int j = threadIdx.x; j < gs; j += blockDim.x) {
        float v = (kv::to_float(xg[j]) - mean) * rstd;
        if (kAffine) {
            const int c = (g * gs + j) / cs;
            v = v * kv::to_float(w[c]) + kv::to_float(b[c]);
        }
        yg[j] = kv::from_float<T>(v);
    }
}

template <typename T>
__device__ void row_amax(const T* __restrict__ x, T* __restrict__ y, int N, long long sx) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    float m = 0.f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) m = nan_max(m, fabsf(kv::to_float(xr[j])));
    m = block_nan_max(m, scratch);
    if (threadIdx.x == 0) y[blockIdx.x] = kv::from_float<T>(m);
}

template <typename T, bool kVar>
__device__ void row_stats(const T* __restrict__ x, T* __restrict__ mean_out, T* __restrict__ var_out, int N,
                          int correction, long long sx) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    float s = 0.f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) s += kv::to_float(xr[j]);
    const float mean = kv::block_sum(s, scratch) / N;
    if (threadIdx.x == 0) mean_out[blockIdx.x] = kv::from_float<T>(mean);
    if (kVar) {
        float q = 0.f;
        for (int j = threadIdx.x; j < N; j += blockDim.x) {
            const float d = kv::to_float(xr[j]) - mean;
            q += d * d;
        }
        q = kv::block_sum(q, scratch);
        if (threadIdx.x == 0) var_out[blockIdx.x] = kv::from_float<T>(q / (float)(N - correction));
    }
}

template <typename T>
__device__ void l2norm(const T* __restrict__ x, T* __restrict__ y, int N, float eps, long long sx, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* yr = y + (long long)blockIdx.x * sy;
    float s = 0.f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        const float v = kv::to_float(xr[j]);
        s += v * v;
    }
    const float norm = sqrtf(kv::block_sum(s, scratch));
    const float d = norm < eps ? eps : norm;  // not fmaxf: a NaN norm must stay NaN
    for (int j = threadIdx.x; j < N; j += blockDim.x) yr[j] = kv::from_float<T>(kv::to_float(xr[j]) / d);
}

template <typename T, bool kCenter, bool kBias>
__device__ void weightless_norm(const T* __restrict__ x, const T* __restrict__ b, T* __restrict__ y, int N, float eps,
                                long long sx, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* yr = y + (long long)blockIdx.x * sy;
    float mean = 0.f;
    if (kCenter) {
        float s = 0.f;
        for (int j = threadIdx.x; j < N; j += blockDim.x) s += kv::to_float(xr[j]);
        mean = kv::block_sum(s, scratch) / N;
    }
    float q = 0.f;
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        const float d = kv::to_float(xr[j]) - mean;
        q += d * d;
    }
    const float rstd = 1.f / sqrtf(kv::block_sum(q, scratch) / N + eps);
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        float v = (kv::to_float(xr[j]) - mean) * rstd;
        if (kBias) v += kv::to_float(b[j]);
        yr[j] = kv::from_float<T>(v);
    }
}

}  // namespace

#define KV_NORM_VARIANTS(TAG, T)                                                                                 \
    extern "C" __global__ void __launch_bounds__(kThreads)                                                       \
        group_norm_##TAG(const T* x, const T* w, const T* b, T* y, int N, int G, int C, float eps, long long sx, \
                         long long sy) {                                                                         \
        group_norm<T, true>(x, w, b, y, N, G, C, eps, sx, sy);                                                  \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(kThreads)                                                       \
        group_norm_noaffine_##TAG(const T* x, T* y, int N, int G, int C, float eps, long long sx, long long sy) { \
        group_norm<T, false>(x, nullptr, nullptr, y, N, G, C, eps, sx, sy);                                     \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(kThreads) row_amax_##TAG(const T* x, T* y, int N, long long sx) { \
        row_amax<T>(x, y, N, sx);                                                                                \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(kThreads) row_mean_##TAG(const T* x, T* y, int N, long long sx) { \
        row_stats<T, false>(x, y, nullptr, N, 0, sx);                                                            \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(kThreads)                                                       \
        var_mean_##TAG(const T* x, T* var, T* mean, int N, int correction, long long sx) {                      \
        row_stats<T, true>(x, mean, var, N, correction, sx);                                                     \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(kThreads)                                                       \
        l2norm_##TAG(const T* x, T* y, int N, float eps, long long sx, long long sy) {                          \
        l2norm<T>(x, y, N, eps, sx, sy);                                                                         \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(kThreads)                                                       \
        rmsnorm_noweight_##TAG(const T* x, T* y, int N, float eps, long long sx, long long sy) {                \
        weightless_norm<T, false, false>(x, nullptr, y, N, eps, sx, sy);                                         \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(kThreads)                                                       \
        layernorm_noweight_##TAG(const T* x, T* y, int N, float eps, long long sx, long long sy) {              \
        weightless_norm<T, true, false>(x, nullptr, y, N, eps, sx, sy);                                          \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(kThreads)                                                       \
        layernorm_bias_##TAG(const T* x, const T* b, T* y, int N, float eps, long long sx, long long sy) {      \
        weightless_norm<T, true, true>(x, b, y, N, eps, sx, sy);                                                 \
    }

KV_NORM_VARIANTS(f32, float)
KV_NORM_VARIANTS(f16, __half)
KV_NORM_VARIANTS(bf16, __nv_bfloat16)
