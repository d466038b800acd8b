// Softmax past the ladder (softmax_fast_spec.py): fp32 math, I/O f32 / f16 / bf16, 16-byte vectors.
//   S5: the row lives in registers like S4, but a row gets only as many threads as it needs
//       (TPR threads per row, ROWS rows per 256-thread block): a warp per row for short rows,
//       so the reductions are shuffles and no barrier; every thread issues all its 16-byte loads
//       before the first use, so each SM keeps tens of KiB in flight.
//   split: a row spread over several blocks (vocab rows of 1e5+ columns), two launches:
//       stats: each block reduces its chunk to (max, sum of exp(x - max)) in a workspace;
//       norm:  each block merges its row's states in a fixed order, re-reads its chunk (an L2 hit
//              when the tensor fits) and writes exp(x - m) / s.
// Row semantics as torch.softmax (softmax_common.cuh): NaN or +inf in a row -> NaN row,
// fully -inf row -> NaN row, -inf element -> exactly 0.
#include "softmax_common.cuh"

namespace {

constexpr int kBlock = 256;  // S5 block size when a row takes fewer threads: ROWS = kBlock / TPR

// Row-wide reduction over TPR threads (a multiple of 32): shuffles, then, when the row spans several
// warps, one barrier and a read of the row's per-warp partials in a fixed order (every thread of the
// row gets the same bits). `part` is this row's WARPS-float slice of shared memory, used once.
template <int WARPS>
__device__ __forceinline__ float row_nanmax(float v, float* part) {
    v = kv::warp_nanmax(v);
    if constexpr (WARPS == 1) {
        return v;
    } else {
        const int w = (threadIdx.x >> 5) % WARPS;
        if ((threadIdx.x & 31) == 0) part[w] = v;
        __syncthreads();
        v = part[0];
#pragma unroll
        for (int k = 1; k < WARPS; ++k) v = kv::nanmax(v, part[k]);
        return v;
    }
}
template <int WARPS>
__device__ __forceinline__ float row_sum(float v, float* part) {
    v = kv::warp_sum(v);
    if constexpr (WARPS == 1) {
        return v;
    } else {
        const int w = (threadIdx.x >> 5) % WARPS;
        if ((threadIdx.x & 31) == 0) part[w] = v;
        __syncthreads();
        v = part[0];
#pragma unroll
        for (int k = 1; k < WARPS; ++k) v += part[k];
        return v;
    }
}

template <typename T>
__device__ __forceinline__ void unpack16(const uint4& raw, float (&out)[kv::Vec16<T>::W]) {
    typename kv::Vec16<T>::U u;
    u.raw = raw;
#pragma unroll
    for (int k = 0; k < kv::Vec16<T>::W; ++k) out[k] = kv::to_float(u.e[k]);
}

// ---- S5 ----------------------------------------------------------------------------------
// Thread t of a row holds vectors t, t + TPR, ... (coalesced across the row's warps).
template <typename T, int TPR, int VECS>
__device__ void s5(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
    constexpr int W = kv::Vec16<T>::W;
    constexpr int ROWS = TPR >= kBlock ? 1 : kBlock / TPR;
    constexpr int WARPS = TPR / 32;
    if (blockDim.x != TPR * ROWS) __trap();  // a wrong launch would skip columns silently
    __shared__ float part_m[ROWS][WARPS], part_s[ROWS][WARPS];
    const int slot = threadIdx.x / TPR, t = threadIdx.x % TPR;
    const int row = blockIdx.x * ROWS + slot;
    // A block's last rows may lie past M: they load nothing and store nothing, but still take part
    // in the barriers of a multi-warp row.
    const int nvec = row < M ? N / W : 0;  // the spec refuses N % W != 0
    const T* xr = x + (size_t)row * N;
    T* yr = y + (size_t)row * N;

    uint4 raw[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) {  // every load in flight before the first use
        const int j = t + c * TPR;
        if (j < nvec) raw[c] = __ldcs(reinterpret_cast<const uint4*>(xr + (size_t)j * W));
    }
    float v[VECS][W];
    float m = -INFINITY;
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        if (t + c * TPR < nvec) {
            unpack16<T>(raw[c], v[c]);
        } else {
#pragma unroll
            for (int k = 0; k < W; ++k) v[c][k] = -INFINITY;
        }
#pragma unroll
        for (int k = 0; k < W; ++k) m = kv::nanmax(m, v[c][k]);
    }
    m = row_nanmax<WARPS>(m, part_m[slot]);
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const bool in = t + c * TPR < nvec;
#pragma unroll
        for (int k = 0; k < W; ++k) {
            v[c][k] = in ? expf(v[c][k] - m) : 0.f;
            s += v[c][k];
        }
    }
    s = row_sum<WARPS>(s, part_s[slot]);
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const int j = t + c * TPR;
        if (j < nvec) {
            typename kv::Vec16<T>::U u;
#pragma unroll
            for (int k = 0; k < W; ++k) u.e[k] = kv::from_float<T>(v[c][k] / s);
            __stcs(reinterpret_cast<uint4*>(yr + (size_t)j * W), u.raw);
        }
    }
}

// ---- split: several blocks per row ----------------------------------------------------------
// Block b of the grid handles chunk b % chunks of row b / chunks; a chunk is SPLIT_THREADS * VECS
// vectors, thread t holding vectors t, t + SPLIT_THREADS, ... of it.
constexpr int kSplitThreads = 512;

template <typename T, int VECS>
__device__ __forceinline__ int split_load(const T* __restrict__ xr, int nvec, int chunk, float (&v)[VECS][kv::Vec16<T>::W]) {
    constexpr int W = kv::Vec16<T>::W;
    const int base = chunk * kSplitThreads * VECS;
    uint4 raw[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const int j = base + threadIdx.x + c * kSplitThreads;
        if (j < nvec) raw[c] = *reinterpret_cast<const uint4*>(xr + (size_t)j * W);
    }
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        if (base + threadIdx.x + c * kSplitThreads < nvec) {
            unpack16<T>(raw[c], v[c]);
        } else {
#pragma unroll
            for (int k = 0; k < W; ++k) v[c][k] = -INFINITY;
        }
    }
    return base;
}

// ws holds (max, sum) pairs, row-major [M][chunks].
template <typename T, int VECS>
__device__ void split_stats(const T* __restrict__ x, float* __restrict__ ws, int M, int N, int chunks) {
    constexpr int W = kv::Vec16<T>::W;
    if (blockDim.x != kSplitThreads) __trap();
    __shared__ float scratch[32];
    const int row = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
    if (row >= M) return;  // whole block: no barrier is skipped by part of it
    const int nvec = N / W;
    float v[VECS][W];
    const int base = split_load<T, VECS>(x + (size_t)row * N, nvec, chunk, v);
    float m = -INFINITY;
#pragma unroll
    for (int c = 0; c < VECS; ++c)
#pragma unroll
        for (int k = 0; k < W; ++k) m = kv::nanmax(m, v[c][k]);
    m = kv::block_nanmax(m, scratch);
    float s = 0.f;
    if (m != -INFINITY) {  // an all -inf chunk is the empty state (-inf, 0), never exp(-inf - -inf)
#pragma unroll
        for (int c = 0; c < VECS; ++c) {
            const bool in = base + threadIdx.x + c * kSplitThreads < nvec;
#pragma unroll
            for (int k = 0; k < W; ++k) s += in ? expf(v[c][k] - m) : 0.f;
        }
    }
    s = kv::block_sum(s, scratch);
    if (threadIdx.x == 0) {
        ws[2 * (size_t)blockIdx.x] = m;
        ws[2 * (size_t)blockIdx.x + 1] = s;
    }
}

template <typename T, int VECS>
__device__ void split_norm(const T* __restrict__ x, const float* __restrict__ ws, T* __restrict__ y, int M, int N,
                           int chunks) {
    constexpr int W = kv::Vec16<T>::W;
    if (blockDim.x != kSplitThreads) __trap();
    const int row = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
    if (row >= M) return;
    // Every block of the row merges the same states in the same order: the same (m, s) bits.
    const float* st = ws + 2 * (size_t)row * chunks;
    kv::MS a = kv::MS{st[0], st[1]};
    for (int c = 1; c < chunks; ++c) a = kv::ms_merge(a, kv::MS{st[2 * c], st[2 * c + 1]});
    const int nvec = N / W;
    const T* xr = x + (size_t)row * N;
    T* yr = y + (size_t)row * N;
    float v[VECS][W];
    const int base = split_load<T, VECS>(xr, nvec, chunk, v);
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const int j = base + threadIdx.x + c * kSplitThreads;
        if (j < nvec) {
#pragma unroll
            for (int k = 0; k < W; ++k) v[c][k] = kv::softmax_out(v[c][k], a.m, a.s);
            kv::store16(yr + (size_t)j * W, v[c]);
        }
    }
}

}  // namespace

// ---- extern "C" entries ----------------------------------------------------------------------
// softmax_s5_t<TPR>_v<VECS>_<io>; the spec's S5_CONFIGS table picks one per (N, dtype).
#define KV_S5(TAG, T, TPR, VECS)                                                                          \
    extern "C" __global__ void __launch_bounds__(TPR >= kBlock ? TPR : kBlock)                           \
        softmax_s5_t##TPR##_v##VECS##_##TAG(const T* x, T* y, int M, int N) {                            \
        s5<T, TPR, VECS>(x, y, M, N);                                                                    \
    }
#define KV_SPLIT(TAG, T, VECS)                                                                            \
    extern "C" __global__ void __launch_bounds__(kSplitThreads)                                          \
        softmax_split_stats_##TAG(const T* x, float* ws, int M, int N, int chunks) {                     \
        split_stats<T, VECS>(x, ws, M, N, chunks);                                                       \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(kSplitThreads)                                          \
        softmax_split_norm_##TAG(const T* x, const float* ws, T* y, int M, int N, int chunks) {          \
        split_norm<T, VECS>(x, ws, y, M, N, chunks);                                                     \
    }

// S5 size classes (elements per row <= TPR * VECS * W); keep in sync with softmax_fast_spec.S5_CONFIGS.
// 16-bit I/O (W = 8) and f32 (W = 4) hold up to 64 elements a thread.
#define KV_S5_16(TAG, T)                                                                                  \
    KV_S5(TAG, T, 32, 2)                                                                                 \
    KV_S5(TAG, T, 32, 4)                                                                                 \
    KV_S5(TAG, T, 32, 8)                                                                                 \
    KV_S5(TAG, T, 64, 8)                                                                                 \
    KV_S5(TAG, T, 128, 8)                                                                                \
    KV_S5(TAG, T, 256, 8)                                                                                \
    KV_S5(TAG, T, 512, 8)
#define KV_S5_32(TAG, T)                                                                                  \
    KV_S5(TAG, T, 32, 4)                                                                                 \
    KV_S5(TAG, T, 32, 8)                                                                                 \
    KV_S5(TAG, T, 32, 16)                                                                                \
    KV_S5(TAG, T, 64, 16)                                                                                \
    KV_S5(TAG, T, 128, 16)                                                                               \
    KV_S5(TAG, T, 256, 16)                                                                               \
    KV_S5(TAG, T, 512, 16)

// Alternatives timed by benchmarks/softmax_tune.py (built with -DKV_S5_TUNE): fewer elements a thread,
// more threads a row.
#ifdef KV_S5_TUNE
#define KV_S5_TUNE_16(TAG, T)                                                                             \
    KV_S5(TAG, T, 64, 4)                                                                                 \
    KV_S5(TAG, T, 128, 4)                                                                                \
    KV_S5(TAG, T, 256, 4)                                                                                \
    KV_S5(TAG, T, 32, 16)                                                                                \
    KV_S5(TAG, T, 64, 16)
#define KV_S5_TUNE_32(TAG, T)                                                                             \
    KV_S5(TAG, T, 64, 8)                                                                                 \
    KV_S5(TAG, T, 128, 8)                                                                                \
    KV_S5(TAG, T, 256, 8)                                                                                \
    KV_S5(TAG, T, 32, 32)
KV_S5_TUNE_32(f32, float)
KV_S5_TUNE_16(f16, __half)
KV_S5_TUNE_16(bf16, __nv_bfloat16)
#endif

KV_S5_32(f32, float)
KV_S5_16(f16, __half)
KV_S5_16(bf16, __nv_bfloat16)
// split: 4 vectors a thread, a chunk of 2048 vectors (8192 f32 / 16384 16-bit elements) a block.
KV_SPLIT(f32, float, 4)
KV_SPLIT(f16, __half, 4)
KV_SPLIT(bf16, __nv_bfloat16, 4)
