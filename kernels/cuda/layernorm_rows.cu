// LayerNorm, rows rung (layernorm_rows_spec.py): y = (x - mean) / sqrt(var + eps) * w + b, population variance,
// fp32 math, I/O f32 / f16 / bf16, 16-byte vectors.
// The row in registers as 16-byte vectors over as many threads as it needs (a warp for short rows, several rows
// per 256-thread block: rows.cuh, the layout of softmax_fast.cu's S5), every load in flight before the first
// use; the two-pass statistics and the output formula of layernorm.cu's tp. Table: LN_ROWS_16 / LN_ROWS_32 at
// the end (the spec's ROWS_16 / ROWS_32 must match).
// Precise math: IEEE division and sqrtf.
#include "rows.cuh"

namespace {

// ---- rows ---------------------------------------------------------------------------------
// Slots past the row's end hold 0: they add nothing to the sum, and the variance skips them per vector (the
// spec refuses N % W != 0, so a vector is wholly inside the row or wholly past it). w and b are read per vector
// in the output loop (every row reads them: L1 / L2 hits), so they take no registers during the reductions.
// R rows per group of TPR threads (consecutive rows), all loaded before the first use: their reductions share
// the shuffles' latency and the barriers (R = 1: one row).

// The R sums of this row group over its TPR = 32 * WARPS threads, in place; every thread of the group gets the
// same bits (shuffles, then one barrier and the per-warp partials read in a fixed order). part: R * WARPS floats
// of this group, used by this one reduction only.
template <int WARPS, int R>
__device__ __forceinline__ void row_sums(float (&v)[R], float* part) {
#pragma unroll
    for (int r = 0; r < R; ++r) v[r] = kv::warp_sum(v[r]);
    if constexpr (WARPS > 1) {
        const int w = (threadIdx.x >> 5) % WARPS;
        if ((threadIdx.x & 31) == 0) {
#pragma unroll
            for (int r = 0; r < R; ++r) part[r * WARPS + w] = v[r];
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float s = part[r * WARPS];
#pragma unroll
            for (int k = 1; k < WARPS; ++k) s += part[r * WARPS + k];
            v[r] = s;
        }
    }
}

template <typename T, int TPR, int VECS, int R = 1>
__device__ void ln_rows(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                        T* __restrict__ y, int M, int N, float eps, long long sx, long long sy) {
    using V = kvrows::Vec16<T>;
    constexpr int W = V::W;
    constexpr int ROWS = kvrows::rows_per_block<TPR>();  // row groups per block
    constexpr int WARPS = TPR / 32;
    if (blockDim.x != TPR * ROWS) __trap();  // a wrong launch would skip columns silently
    __shared__ float part_s[ROWS][R * WARPS], part_q[ROWS][R * WARPS];
    const int slot = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int row0 = (blockIdx.x * ROWS + slot) * R;
    // A block's last rows may lie past M: they load and store nothing, but take part in the barriers.
    int nvec[R];
    uint4 raw[R][VECS];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        nvec[r] = row0 + r < M ? N / W : 0;
        const T* xr = x + (size_t)(row0 + r) * sx;  // row strides in elements (contiguous rows: N)
#pragma unroll
        for (int c = 0; c < VECS; ++c) raw[r][c] = kvrows::load16_or_zero<T>(xr, t + c * TPR, nvec[r]);  // in flight
    }
    float v[R][VECS][W], stat[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        float part[VECS];
#pragma unroll
        for (int c = 0; c < VECS; ++c) {
            kvrows::unpack16<T>(raw[r][c], v[r][c]);
            part[c] = kvrows::tree_sum(v[r][c]);
        }
        stat[r] = kvrows::tree_sum(part);
    }
    row_sums<WARPS, R>(stat, part_s[slot]);
    float mean[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        mean[r] = stat[r] / (float)N;
        float part[VECS];
#pragma unroll
        for (int c = 0; c < VECS; ++c) {
            float q[W];
#pragma unroll
            for (int k = 0; k < W; ++k) {
                const float d = v[r][c][k] - mean[r];
                q[k] = d * d;
            }
            part[c] = t + c * TPR < nvec[r] ? kvrows::tree_sum(q) : 0.f;  // padding must not add mean^2
        }
        stat[r] = kvrows::tree_sum(part);
    }
    row_sums<WARPS, R>(stat, part_q[slot]);
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float rstd = 1.0f / sqrtf(stat[r] / (float)N + eps);
        T* yr = y + (size_t)(row0 + r) * sy;
#pragma unroll
        for (int c = 0; c < VECS; ++c) {
            const int j = t + c * TPR;
            if (j < nvec[r]) {
                float wv[W], bv[W];
                kvrows::unpack16<T>(__ldg(reinterpret_cast<const uint4*>(w + (size_t)j * W)), wv);
                kvrows::unpack16<T>(__ldg(reinterpret_cast<const uint4*>(b + (size_t)j * W)), bv);
                typename V::U u;
#pragma unroll
                for (int k = 0; k < W; ++k)
                    u.e[k] = kv::from_float<T>(fmaf((v[r][c][k] - mean[r]) * rstd, wv[k], bv[k]));
                __stcs(reinterpret_cast<uint4*>(yr + (size_t)j * W), u.raw);
            }
        }
    }
}

}  // namespace

// layernorm_rows_t<TPR>_v<VECS>[_m<MINB>]_<io>; the spec's ROWS_16 / ROWS_32 tables pick one per (N, dtype).
#define LN_ROWS(T, tag, TPR, VECS)                                                                    \
    extern "C" __global__ void __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock)        \
        layernorm_rows_t##TPR##_v##VECS##_##tag(const T* x, const T* w, const T* b, T* y, int M, int N, \
                                                float eps, long long sx, long long sy) {              \
        ln_rows<T, TPR, VECS>(x, w, b, y, M, N, eps, sx, sy);                                               \
    }
// At least MINB blocks resident per SM (a register cap for ptxas): more rows in flight at once.
#define LN_ROWS_M(T, tag, TPR, VECS, MINB)                                                                \
    extern "C" __global__ void __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock, MINB)      \
        layernorm_rows_t##TPR##_v##VECS##_m##MINB##_##tag(const T* x, const T* w, const T* b, T* y, int M,  \
                                                          int N, float eps, long long sx, long long sy) {   \
        ln_rows<T, TPR, VECS>(x, w, b, y, M, N, eps, sx, sy);                                               \
    }
// (threads per row, 16-byte vectors per thread[, min blocks]), smallest first: a row of N <= TPR * VECS * W
// columns. Picked by benchmarks/layernorm_tune.py on the H200 (docs/benchmarks.md): 16-bit rows of 2048-8192
// want 2-4 vectors a thread over 128-256 threads (38-56 registers) rather than S5's 8 over a warp or two.
#define LN_ROWS_16(T, tag)                                                                            \
    LN_ROWS(T, tag, 32, 1) LN_ROWS(T, tag, 32, 2) LN_ROWS(T, tag, 32, 4) LN_ROWS(T, tag, 128, 2)      \
    LN_ROWS_M(T, tag, 128, 4, 4) LN_ROWS_M(T, tag, 256, 4, 3) LN_ROWS(T, tag, 256, 8) LN_ROWS(T, tag, 512, 8)
#define LN_ROWS_32(T, tag)                                                                            \
    LN_ROWS(T, tag, 32, 1) LN_ROWS(T, tag, 32, 2) LN_ROWS(T, tag, 32, 4) LN_ROWS(T, tag, 64, 4)       \
    LN_ROWS(T, tag, 128, 4) LN_ROWS(T, tag, 256, 4) LN_ROWS(T, tag, 256, 8) LN_ROWS(T, tag, 512, 8)

LN_ROWS_32(float, f32)
LN_ROWS_16(__half, f16)
LN_ROWS_16(__nv_bfloat16, bf16)

// benchmarks/layernorm_tune.py builds with -DKV_LN_TUNE: a grid of (TPR, VECS, R, MINB) beside the tables.
// layernorm_rowsx_t<TPR>_v<VECS>_r<R>_m<MINB>_<io> (MINB 0: no minimum blocks per SM asked of ptxas).
#ifdef KV_LN_TUNE
#define LN_BOUNDS_0(TPR) __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock)
#define LN_BOUNDS_M(TPR, MINB) __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock, MINB)
#define LN_X(T, tag, TPR, VECS, R, MINB, BOUNDS)                                                        \
    extern "C" __global__ void BOUNDS layernorm_rowsx_t##TPR##_v##VECS##_r##R##_m##MINB##_##tag(      \
        const T* x, const T* w, const T* b, T* y, int M, int N, float eps, long long sx, long long sy) { \
        ln_rows<T, TPR, VECS, R>(x, w, b, y, M, N, eps, sx, sy);                                        \
    }
#define LN_XR(T, tag, TPR, VECS) \
    LN_X(T, tag, TPR, VECS, 1, 0, LN_BOUNDS_0(TPR)) LN_X(T, tag, TPR, VECS, 2, 0, LN_BOUNDS_0(TPR))
#define LN_XM(T, tag, TPR, VECS, MINB) \
    LN_X(T, tag, TPR, VECS, 1, MINB, LN_BOUNDS_M(TPR, MINB)) LN_X(T, tag, TPR, VECS, 2, MINB, LN_BOUNDS_M(TPR, MINB))
#define LN_GRID(T, tag)                                                                                  \
    LN_XR(T, tag, 32, 2) LN_XR(T, tag, 32, 4) LN_XR(T, tag, 64, 2) LN_XR(T, tag, 64, 4)                 \
    LN_XM(T, tag, 64, 4, 4) LN_XR(T, tag, 128, 1) LN_XR(T, tag, 128, 2) LN_XM(T, tag, 128, 2, 4)        \
    LN_XR(T, tag, 128, 4) LN_XM(T, tag, 128, 4, 4) LN_XR(T, tag, 256, 1) LN_XR(T, tag, 256, 2)          \
    LN_XR(T, tag, 256, 4) LN_XM(T, tag, 256, 4, 3) LN_XR(T, tag, 512, 1) LN_XR(T, tag, 512, 2)
LN_GRID(__half, f16)
LN_GRID(__nv_bfloat16, bf16)
LN_GRID(float, f32)
#endif
