// LayerNorm: y = (x - mean) / sqrt(var + eps) * w + b, population variance, fp32 math,
// I/O f32 / f16 / bf16. One block per row; blockDim.x must be LN_THREADS (the spec launches that).
//   tp:      two-pass statistics (mean, then sum of (x - mean)^2) on the row held in registers;
//            template on elements per thread (size classes chosen by the spec).
//   welford: any N; per-thread Welford over a strided slice of the row, then a block merge of
//            (n, mean, M2) with Chan's formula; normalize re-reads x.
// Precise math: IEEE division and sqrtf.
#include "common.cuh"

#define LN_THREADS 256

namespace {

template <typename T, int E>
__device__ void ln_two_pass(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                            T* __restrict__ y, int N, float eps) {
    __shared__ float scratch[32];
    const long long off = (long long)blockIdx.x * N;
    float v[E];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * LN_THREADS;
        v[k] = i < N ? kv::to_float(x[off + i]) : 0.f;
        s += v[k];
    }
    const float mean = kv::block_sum(s, scratch) / (float)N;
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * LN_THREADS;
        const float d = v[k] - mean;
        if (i < N) ss = fmaf(d, d, ss);  // padding must not add mean^2
    }
    const float var = kv::block_sum(ss, scratch) / (float)N;
    const float rstd = 1.0f / sqrtf(var + eps);
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * LN_THREADS;
        if (i < N) y[off + i] = kv::from_float<T>(fmaf((v[k] - mean) * rstd, kv::to_float(w[i]), kv::to_float(b[i])));
    }
}

// Welford partial: count n (exact in float up to 2^24), mean, M2 = sum of squared deviations.
struct Stats {
    float n, mean, m2;
};

// Chan et al. merge. a is always the lower-indexed partial so that every lane of a butterfly
// computes bit-identical results. Partials with n = 0 (threads or warps past the row end) are
// the identity: returning the other side avoids 0/0.
__device__ __forceinline__ Stats chan_merge(Stats a, Stats b) {
    if (b.n == 0.f) return a;
    if (a.n == 0.f) return b;
    const float n = a.n + b.n;
    const float d = b.mean - a.mean;
    const float fb = b.n / n;
    return {n, fmaf(d, fb, a.mean), a.m2 + b.m2 + d * (d * fb) * a.n};
}

__device__ __forceinline__ Stats warp_merge(Stats s) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const Stats t = {__shfl_xor_sync(0xffffffffu, s.n, o), __shfl_xor_sync(0xffffffffu, s.mean, o),
                         __shfl_xor_sync(0xffffffffu, s.m2, o)};
        s = (lane & o) ? chan_merge(t, s) : chan_merge(s, t);
    }
    return s;
}

template <typename T>
__device__ void ln_welford(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                           T* __restrict__ y, int N, float eps) {
    __shared__ float sn[32], smean[32], sm2[32];
    const long long off = (long long)blockIdx.x * N;
    Stats s = {0.f, 0.f, 0.f};
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        const float v = kv::to_float(x[off + i]);
        s.n += 1.f;
        const float d = v - s.mean;
        s.mean += d / s.n;
        s.m2 = fmaf(d, v - s.mean, s.m2);
    }
    s = warp_merge(s);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sn[warp] = s.n;
        smean[warp] = s.mean;
        sm2[warp] = s.m2;
    }
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    s = lane < nwarps ? Stats{sn[lane], smean[lane], sm2[lane]} : Stats{0.f, 0.f, 0.f};
    s = warp_merge(s);  // every warp merges the same partials in the same order: all threads agree
    const float mean = s.mean;
    const float rstd = 1.0f / sqrtf(s.m2 / (float)N + eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        y[off + i] = kv::from_float<T>(
            fmaf((kv::to_float(x[off + i]) - mean) * rstd, kv::to_float(w[i]), kv::to_float(b[i])));
}

}  // namespace

#define LN_TP(T, tag, E)                                                                              \
    extern "C" __global__ void __launch_bounds__(LN_THREADS)                                          \
        layernorm_tp_##tag##_e##E(const T* x, const T* w, const T* b, T* y, int M, int N, float eps) { \
        ln_two_pass<T, E>(x, w, b, y, N, eps);                                                        \
    }

// Size classes (elements per thread); the spec's table must match these instantiations.
#define LN_ALL(T, tag)                                                                                \
    LN_TP(T, tag, 1) LN_TP(T, tag, 4) LN_TP(T, tag, 8) LN_TP(T, tag, 16) LN_TP(T, tag, 32)            \
    extern "C" __global__ void __launch_bounds__(LN_THREADS)                                          \
        layernorm_welford_##tag(const T* x, const T* w, const T* b, T* y, int M, int N, float eps) {  \
        ln_welford<T>(x, w, b, y, N, eps);                                                            \
    }

LN_ALL(float, f32)
LN_ALL(__half, f16)
LN_ALL(__nv_bfloat16, bf16)
