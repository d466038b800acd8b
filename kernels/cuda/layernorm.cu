// LayerNorm: y = (x - mean) / sqrt(var + eps) * w + b, population variance, fp32 math,
// I/O f32 / f16 / bf16. One block per row; blockDim.x must be LN_THREADS (the spec launches that).
//   tp:      two-pass statistics (mean, then sum of (x - mean)^2) on the row held in registers;
//            template on elements per thread (size classes chosen by the spec).
//   welford: any N; per-thread Welford over a strided slice of the row, then a block merge of
//            (n, mean, M2) with Chan's formula; normalize re-reads x.
//   rows:    the row in registers as 16-byte vectors over as many threads as it needs (a warp for short rows,
//            several rows per 256-thread block: rows.cuh, the layout of softmax_fast.cu's S5), every load in
//            flight before the first use; the same two-pass statistics and output formula as tp. Table:
//            LN_ROWS_16 / LN_ROWS_32 at the end (the spec's ROWS_16 / ROWS_32 must match).
// Precise math: IEEE division and sqrtf.
#include "common.cuh"
#include "rows.cuh"

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

// ---- rows ---------------------------------------------------------------------------------
// Slots past the row's end hold 0: they add nothing to the sum, and the variance skips them per vector (the
// spec refuses N % W != 0, so a vector is wholly inside the row or wholly past it). w and b are read per vector
// in the output loop (every row reads them: L1 / L2 hits), so they take no registers during the reductions.
template <typename T, int TPR, int VECS>
__device__ void ln_rows(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                        T* __restrict__ y, int M, int N, float eps) {
    using V = kvrows::Vec16<T>;
    constexpr int W = V::W;
    constexpr int ROWS = kvrows::rows_per_block<TPR>();
    constexpr int WARPS = TPR / 32;
    if (blockDim.x != TPR * ROWS) __trap();  // a wrong launch would skip columns silently
    __shared__ float part_s[ROWS][WARPS], part_q[ROWS][WARPS];
    const int slot = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int row = blockIdx.x * ROWS + slot;
    // A block's last rows may lie past M: they load and store nothing, but take part in the barriers.
    const int nvec = row < M ? N / W : 0;
    const T* xr = x + (size_t)row * N;
    uint4 raw[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) raw[c] = kvrows::load16_or_zero<T>(xr, t + c * TPR, nvec);  // all in flight
    float v[VECS][W], part[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        kvrows::unpack16<T>(raw[c], v[c]);
        part[c] = kvrows::tree_sum(v[c]);
    }
    const float mean = kvrows::row_sum<WARPS>(kvrows::tree_sum(part), part_s[slot]) / (float)N;
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        float q[W];
#pragma unroll
        for (int k = 0; k < W; ++k) {
            const float d = v[c][k] - mean;
            q[k] = d * d;
        }
        part[c] = t + c * TPR < nvec ? kvrows::tree_sum(q) : 0.f;  // padding must not add mean^2
    }
    const float var = kvrows::row_sum<WARPS>(kvrows::tree_sum(part), part_q[slot]) / (float)N;
    const float rstd = 1.0f / sqrtf(var + eps);
    T* yr = y + (size_t)row * N;
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const int j = t + c * TPR;
        if (j < nvec) {
            float wv[W], bv[W];
            kvrows::unpack16<T>(__ldg(reinterpret_cast<const uint4*>(w + (size_t)j * W)), wv);
            kvrows::unpack16<T>(__ldg(reinterpret_cast<const uint4*>(b + (size_t)j * W)), bv);
            typename V::U u;
#pragma unroll
            for (int k = 0; k < W; ++k) u.e[k] = kv::from_float<T>(fmaf((v[c][k] - mean) * rstd, wv[k], bv[k]));
            __stcs(reinterpret_cast<uint4*>(yr + (size_t)j * W), u.raw);
        }
    }
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

// layernorm_rows_t<TPR>_v<VECS>_<io>; the spec's ROWS_16 / ROWS_32 tables pick one per (N, dtype).
#define LN_ROWS(T, tag, TPR, VECS)                                                                    \
    extern "C" __global__ void __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock)        \
        layernorm_rows_t##TPR##_v##VECS##_##tag(const T* x, const T* w, const T* b, T* y, int M, int N, \
                                                float eps) {                                          \
        ln_rows<T, TPR, VECS>(x, w, b, y, M, N, eps);                                                 \
    }
// (threads per row, 16-byte vectors per thread), smallest first: a row of N <= TPR * VECS * W columns.
// Taken from S5's tuned tables (the same loads and layout; not yet tuned for LayerNorm on a GPU).
#define LN_ROWS_16(T, tag)                                                                            \
    LN_ROWS(T, tag, 32, 1) LN_ROWS(T, tag, 32, 2) LN_ROWS(T, tag, 32, 4) LN_ROWS(T, tag, 32, 8)       \
    LN_ROWS(T, tag, 64, 8) LN_ROWS(T, tag, 128, 8) LN_ROWS(T, tag, 256, 8) LN_ROWS(T, tag, 512, 8)
#define LN_ROWS_32(T, tag)                                                                            \
    LN_ROWS(T, tag, 32, 1) LN_ROWS(T, tag, 32, 2) LN_ROWS(T, tag, 32, 4) LN_ROWS(T, tag, 64, 4)       \
    LN_ROWS(T, tag, 64, 8) LN_ROWS(T, tag, 128, 8) LN_ROWS(T, tag, 256, 8) LN_ROWS(T, tag, 512, 8)

LN_ROWS_32(float, f32)
LN_ROWS_16(__half, f16)
LN_ROWS_16(__nv_bfloat16, bf16)
