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
// HINT: the cache policy of x's loads and y's stores (benchmarks/layernorm_tune.py): 0 read-only path (ld.global.nc)
// and streaming stores (st.global.cs), the table's for f32; 1 evict-first loads (ld.global.cs); 2 read-only loads
// and plain write-back stores, the table's for 16-bit I/O (1-2 % ahead of 0 at 8192 x 2048-8192 on the H200, run 4
// of docs/gpu-runs/2026-12-02-issue-24.md; for f32 no gain, and ptxas spills 8 bytes of the 128 x 4 class on sm_80).
template <int HINT, typename T>
__device__ __forceinline__ uint4 load_x(const T* xr, int j, int nvec) {
    if (j >= nvec) return make_uint4(0u, 0u, 0u, 0u);
    const uint4* p = reinterpret_cast<const uint4*>(xr + (size_t)j * kvrows::Vec16<T>::W);
    if constexpr (HINT == 1) return __ldcs(p);
    return __ldg(p);
}
template <int HINT>
__device__ __forceinline__ void store_y(uint4* p, const uint4& v) {
    if constexpr (HINT == 2) *p = v;
    else __stcs(p, v);
}

template <typename T>
constexpr int kHint = sizeof(T) == 2 ? 2 : 0;  // the table's cache policy

// One row group of a block: `raw` holds this thread's vectors of row `row` (nvec > 0: in the row); `next` runs
// once the vectors are unpacked (the persistent entries load their next row there, so it is in flight during the
// reductions).
template <typename T, int TPR, int VECS, int HINT, typename Next>
__device__ __forceinline__ void ln_row(uint4 (&raw)[VECS], Next next, const T* __restrict__ w,
                                       const T* __restrict__ b, T* __restrict__ yr, int nvec, int N, float eps,
                                       float* ps, float* pq) {
    using V = kvrows::Vec16<T>;
    constexpr int W = V::W;
    constexpr int WARPS = TPR / 32;
    const int t = threadIdx.x % TPR;
    float v[VECS][W], part[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        kvrows::unpack16<T>(raw[c], v[c]);
        part[c] = kvrows::tree_sum(v[c]);
    }
    next();
    const float mean = kvrows::row_sum<WARPS>(kvrows::tree_sum(part), ps) / (float)N;
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
    const float var = kvrows::row_sum<WARPS>(kvrows::tree_sum(part), pq) / (float)N;
    const float rstd = 1.0f / sqrtf(var + eps);
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
            store_y<HINT>(reinterpret_cast<uint4*>(yr + (size_t)j * W), u.raw);
        }
    }
}

template <typename T, int TPR, int VECS, int HINT = kHint<T>>
__device__ void ln_rows(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                        T* __restrict__ y, int M, int N, float eps, long long sx, long long sy) {
    constexpr int ROWS = kvrows::rows_per_block<TPR>();
    constexpr int WARPS = TPR / 32;
    if (blockDim.x != TPR * ROWS) __trap();  // a wrong launch would skip columns silently
    __shared__ float part_s[ROWS][WARPS], part_q[ROWS][WARPS];
    const int slot = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int row = blockIdx.x * ROWS + slot;
    // A block's last rows may lie past M: they load and store nothing, but take part in the barriers.
    const int nvec = row < M ? N / kvrows::Vec16<T>::W : 0;
    const T* xr = x + (size_t)row * sx;  // row strides in elements (contiguous rows: N)
    uint4 raw[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) raw[c] = load_x<HINT>(xr, t + c * TPR, nvec);  // all in flight
    ln_row<T, TPR, VECS, HINT>(raw, [] {}, w, b, y + (size_t)row * sy, nvec, N, eps, part_s[slot], part_q[slot]);
}

// Strided variant: a block takes row groups blockIdx.x, + gridDim.x, ... and loads the next group's vectors while
// it reduces the current one, so a row's loads are in flight during the other's barriers. Any grid size is
// correct; the spec launches one block per GROUPS_PER_BLOCK groups (layernorm_rows_spec.py STRIDED).
template <typename T, int TPR, int VECS, int HINT = kHint<T>>
__device__ void ln_rows_p(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                          T* __restrict__ y, int M, int N, float eps, long long sx, long long sy) {
    constexpr int ROWS = kvrows::rows_per_block<TPR>();
    constexpr int WARPS = TPR / 32;
    if (blockDim.x != TPR * ROWS) __trap();
    __shared__ float part_s[ROWS][WARPS], part_q[ROWS][WARPS];
    const int slot = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int groups = (M + ROWS - 1) / ROWS;
    const int nv = N / kvrows::Vec16<T>::W;
    uint4 raw[VECS];
    int g = blockIdx.x;
    auto load = [&](int gg) {
        const int r = gg * ROWS + slot;
        const int n = gg < groups && r < M ? nv : 0;
#pragma unroll
        for (int c = 0; c < VECS; ++c) raw[c] = load_x<HINT>(x + (size_t)r * sx, t + c * TPR, n);
    };
    load(g);
    for (; g < groups; g += gridDim.x) {  // g is the block's: every thread takes the same trips (barriers)
        const int row = g * ROWS + slot;
        const int nvec = row < M ? nv : 0;
        ln_row<T, TPR, VECS, HINT>(raw, [&] { load(g + gridDim.x); }, w, b, y + (size_t)row * sy, nvec, N, eps,
                                   part_s[slot], part_q[slot]);
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
// The strided entries (ln_rows_p), same name scheme: the spec's STRIDED lists them.
#define LN_ROWS_P(T, tag, TPR, VECS)                                                                  \
    extern "C" __global__ void __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock)        \
        layernorm_rows_t##TPR##_v##VECS##_##tag(const T* x, const T* w, const T* b, T* y, int M, int N, \
                                                float eps, long long sx, long long sy) {              \
        ln_rows_p<T, TPR, VECS>(x, w, b, y, M, N, eps, sx, sy);                                       \
    }
// At least MINB blocks resident per SM (a register cap for ptxas): more rows in flight at once.
#define LN_ROWS_M(T, tag, TPR, VECS, MINB)                                                                \
    extern "C" __global__ void __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock, MINB)      \
        layernorm_rows_t##TPR##_v##VECS##_m##MINB##_##tag(const T* x, const T* w, const T* b, T* y, int M,  \
                                                          int N, float eps, long long sx, long long sy) {   \
        ln_rows<T, TPR, VECS>(x, w, b, y, M, N, eps, sx, sy);                                               \
    }
// (threads per row, 16-byte vectors per thread[, min blocks]), smallest first: a row of N <= TPR * VECS * W
// columns. Picked by benchmarks/layernorm_tune.py on the H200 (docs/benchmarks.md): 16-bit rows of 4096-8192
// want 4 vectors a thread over 128-256 threads (52-56 registers) rather than S5's 8 over a warp or two; 16-bit
// rows of 1032-2048 take the strided entry, 2 vectors over 128 threads with the next rows' loads in flight.
#define LN_ROWS_16(T, tag)                                                                            \
    LN_ROWS(T, tag, 32, 1) LN_ROWS(T, tag, 32, 2) LN_ROWS(T, tag, 32, 4) LN_ROWS_P(T, tag, 128, 2)    \
    LN_ROWS(T, tag, 128, 4) LN_ROWS_M(T, tag, 256, 4, 3) LN_ROWS(T, tag, 256, 8) LN_ROWS(T, tag, 512, 8)
#define LN_ROWS_32(T, tag)                                                                            \
    LN_ROWS(T, tag, 32, 1) LN_ROWS(T, tag, 32, 2) LN_ROWS(T, tag, 32, 4) LN_ROWS(T, tag, 64, 4)       \
    LN_ROWS(T, tag, 128, 4) LN_ROWS_M(T, tag, 256, 4, 3) LN_ROWS(T, tag, 256, 8) LN_ROWS(T, tag, 512, 8)

LN_ROWS_32(float, f32)
LN_ROWS_16(__half, f16)
LN_ROWS_16(__nv_bfloat16, bf16)

// benchmarks/layernorm_tune.py builds with -DKV_LN_TUNE: a grid of (TPR, VECS, HINT, MINB) beside the tables.
// layernorm_rowsx_t<TPR>_v<VECS>_h<HINT>_m<MINB>_<io> (MINB 0: no minimum blocks per SM asked of ptxas).
#ifdef KV_LN_TUNE
#define LN_BOUNDS_0(TPR) __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock)
#define LN_BOUNDS_M(TPR, MINB) __launch_bounds__(TPR >= kvrows::kBlock ? TPR : kvrows::kBlock, MINB)
#define LN_X(T, tag, TPR, VECS, H, MINB, BOUNDS)                                                        \
    extern "C" __global__ void BOUNDS layernorm_rowsx_t##TPR##_v##VECS##_h##H##_m##MINB##_##tag(      \
        const T* x, const T* w, const T* b, T* y, int M, int N, float eps, long long sx, long long sy) { \
        ln_rows<T, TPR, VECS, H>(x, w, b, y, M, N, eps, sx, sy);                                        \
    }
#define LN_XH(T, tag, TPR, VECS) LN_X(T, tag, TPR, VECS, 0, 0, LN_BOUNDS_0(TPR)) \
    LN_X(T, tag, TPR, VECS, 1, 0, LN_BOUNDS_0(TPR)) LN_X(T, tag, TPR, VECS, 2, 0, LN_BOUNDS_0(TPR))
#define LN_XM(T, tag, TPR, VECS, MINB) LN_X(T, tag, TPR, VECS, 0, MINB, LN_BOUNDS_M(TPR, MINB)) \
    LN_X(T, tag, TPR, VECS, 1, MINB, LN_BOUNDS_M(TPR, MINB)) LN_X(T, tag, TPR, VECS, 2, MINB, LN_BOUNDS_M(TPR, MINB))
#define LN_GRID(T, tag)                                                                                  \
    LN_XH(T, tag, 32, 4) LN_XH(T, tag, 64, 4) LN_XM(T, tag, 64, 4, 4) LN_XH(T, tag, 128, 2)             \
    LN_XM(T, tag, 128, 2, 4) LN_XM(T, tag, 128, 2, 6) LN_XH(T, tag, 128, 4) LN_XM(T, tag, 128, 4, 4)    \
    LN_XH(T, tag, 256, 2) LN_XH(T, tag, 256, 4) LN_XM(T, tag, 256, 4, 3) LN_XH(T, tag, 512, 2)
LN_GRID(__half, f16)
LN_GRID(__nv_bfloat16, bf16)
LN_GRID(float, f32)
// layernorm_rowsp_t<TPR>_v<VECS>_h<HINT>_m<MINB>_<io>: the persistent variant (ln_rows_p)
#define LN_P(T, tag, TPR, VECS, H, MINB, BOUNDS)                                                          \
    extern "C" __global__ void BOUNDS layernorm_rowsp_t##TPR##_v##VECS##_h##H##_m##MINB##_##tag(           \
        const T* x, const T* w, const T* b, T* y, int M, int N, float eps, long long sx, long long sy) { \
        ln_rows_p<T, TPR, VECS, H>(x, w, b, y, M, N, eps, sx, sy);                                      \
    }
#define LN_PGRID(T, tag) LN_P(T, tag, 32, 8, 2, 0, LN_BOUNDS_0(32)) LN_P(T, tag, 64, 4, 2, 0, LN_BOUNDS_0(64)) \
    LN_P(T, tag, 128, 2, 2, 0, LN_BOUNDS_0(128)) LN_P(T, tag, 128, 2, 0, 0, LN_BOUNDS_0(128))                \
    LN_P(T, tag, 128, 2, 2, 5, LN_BOUNDS_M(128, 5)) LN_P(T, tag, 128, 2, 2, 6, LN_BOUNDS_M(128, 6))         \
    LN_P(T, tag, 256, 1, 2, 0, LN_BOUNDS_0(256)) LN_P(T, tag, 256, 1, 2, 6, LN_BOUNDS_M(256, 6))            \
    LN_P(T, tag, 64, 4, 2, 3, LN_BOUNDS_M(64, 3)) LN_P(T, tag, 128, 4, 2, 0, LN_BOUNDS_0(128))              \
    LN_P(T, tag, 256, 2, 2, 0, LN_BOUNDS_0(256)) LN_P(T, tag, 256, 4, 2, 0, LN_BOUNDS_0(256))
LN_PGRID(__half, f16)
LN_PGRID(__nv_bfloat16, bf16)
#endif
