// Softmax past the ladder (softmax_fast_spec.py): fp32 math, I/O f32 / f16 / bf16, 16-byte vectors.
//   S5: the row lives in registers like S4, but a row gets only as many threads as it needs
//       (TPR threads per row, ROWS rows per 256-thread block): a warp per row for short rows,
//       so the reductions are shuffles and no barrier; every thread issues all its 16-byte loads
//       before the first use, so each SM keeps tens of KiB in flight.
//   split: a row spread over several blocks (vocab rows of 1e5+ columns), two launches:
//       stats: each block reduces its chunk to (max, sum of exp(x - max)) in a workspace;
//       norm:  each block merges its row's states in a fixed order, re-reads its chunk (an L2 hit
//              when the tensor fits) and writes exp(x - m) / s.
//   cluster (sm_90): a row spread over the CLUSTER blocks of a thread-block cluster, one launch and one
//       read of x: each block holds its chunk in registers, the row's max and then its sum are exchanged
//       through distributed shared memory.
// Row semantics as torch.softmax (softmax_common.cuh): NaN or +inf in a row -> NaN row,
// fully -inf row -> NaN row, -inf element -> exactly 0.
//
// Fewer instructions per element than S1-S4 (16-bit rows are issue-bound, not memory-bound, at 3+ TB/s):
// - the row max is a plain fmaxf, which skips NaN: a NaN element still makes exp(NaN - m) = NaN and so the
//   sum and the whole row NaN; +inf makes m = +inf and exp(inf - inf) = NaN; fully -inf gives m = -inf
//   and exp(-inf - -inf) = NaN; -inf among finite values gives exp(-inf) = 0, as torch;
// - y = e / s is correctly rounded without a division per element: r = 1/s (IEEE) once per row, then
//   q = e * r and one FMA correction (Markstein's theorem: q within 1 ulp and r correctly rounded give
//   the correctly rounded quotient; with a subnormal quotient the error stays under the smallest
//   subnormal, which the precise tolerance counts for underflow).
#include <cooperative_groups.h>

#include "rows.cuh"
#include "softmax_common.cuh"

namespace {

using kvrows::kBlock;  // S5 block size when a row takes fewer threads: ROWS = kBlock / TPR
using kvrows::tree_sum;
using kvrows::unpack16;

__device__ __forceinline__ float div_rn(float e, float s, float r) {
    const float q = __fmul_rn(e, r);
    return fmaf(fmaf(-q, s, e), r, q);
}

template <int WARPS>
__device__ __forceinline__ float row_max(float v, float* part) {
    return kvrows::row_reduce<WARPS>(v, part, kvrows::MaxOp{});
}
using kvrows::row_sum;

// Pairwise (tree) max over a thread's registers (the sum: kvrows::tree_sum): a dependency chain of log2(n) instead of n,
// which is what limits a 16-bit row (twice the elements per byte of f32) when latency is not hidden.
template <int N>
__device__ __forceinline__ float tree_max(const float (&a)[N]) {
    if constexpr (N == 1) {
        return a[0];
    } else {
        float b[(N + 1) / 2];
#pragma unroll
        for (int i = 0; i < N / 2; ++i) b[i] = fmaxf(a[2 * i], a[2 * i + 1]);
        if constexpr (N % 2) b[N / 2] = a[N - 1];
        return tree_max(b);
    }
}
// ---- S5 ----------------------------------------------------------------------------------
// Thread t of a row holds vectors t, t + TPR, ... (coalesced across the row's warps).
// LOAD selects the load instruction (0: ld.global.cs, 1: ld.global.nc, 2: ld.global).
// A slot past the row's end holds -inf, so the max, exp and sum need no guard per element (16-bit rows
// are issue-bound at copy speed, and per-element guards were a third of S5's instructions): exp(-inf - m)
// is exactly 0 for a finite m, and where m is -inf or +inf the row comes out NaN with or without the
// padding (m = -inf: every element is -inf; m = +inf: exp(inf - inf) = NaN).
template <typename T>
__device__ __forceinline__ uint4 neg_inf16() {
    if constexpr (sizeof(T) == 4) {
        return make_uint4(0xff800000u, 0xff800000u, 0xff800000u, 0xff800000u);
    } else if constexpr (std::is_same_v<T, __half>) {
        return make_uint4(0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u);
    } else {
        return make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
    }
}

template <typename T, int LOAD>
__device__ __forceinline__ uint4 load16_or_neg_inf(const T* xr, int j, int nvec) {
    const uint4* p = reinterpret_cast<const uint4*>(xr + (size_t)j * kv::Vec16<T>::W);
    if (j < nvec) return LOAD == 0 ? __ldcs(p) : LOAD == 1 ? __ldg(p) : *p;
    return neg_inf16<T>();
}

// Plain loads for 16-bit rows, ld.global.nc for f32: the fastest of the three on the H200 (softmax_tune.py).
template <typename T>
constexpr int kLoad = sizeof(T) == 4 ? 1 : 2;

// y = e / s correctly rounded (div_rn), converted and stored as one 16-byte vector.
template <typename T>
__device__ __forceinline__ void store16_div(T* p, const float (&e)[kv::Vec16<T>::W], float s, float r) {
    typename kv::Vec16<T>::U u;
#pragma unroll
    for (int k = 0; k < kv::Vec16<T>::W; ++k) u.e[k] = kv::from_float<T>(div_rn(e[k], s, r));
    __stcs(reinterpret_cast<uint4*>(p), u.raw);
}

// S5f (math_mode 'fast'): exp(t) = ex2.approx.ftz(t * log2 e) and y = e * (1/s), 3 + 1 instructions an element
// instead of 8 + 3 (expf and the correctly rounded division). t = x - m is still formed exactly as in S5, so the
// argument's rounding is relative to |x - m| (2u|t| with log2 e's rounding), inside the 'fast' bound
// 2 ulp + 2.35u|t| (errmodel.F32['fast']); ex2.approx is 2 ulp, the product of two correctly rounded
// factors 2u, subnormal results flush to 0. For 16-bit outputs (u_out = 2^-8 or 2^-11) these fp32 errors are
// far below one output ulp.
__device__ __forceinline__ float exp_approx(float t) {
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(t * 1.4426950408889634f));
    return e;
}

template <typename T>
__device__ __forceinline__ void store16_mul(T* p, const float (&e)[kv::Vec16<T>::W], float r) {
    typename kv::Vec16<T>::U u;
#pragma unroll
    for (int k = 0; k < kv::Vec16<T>::W; ++k) u.e[k] = kv::from_float<T>(e[k] * r);
    __stcs(reinterpret_cast<uint4*>(p), u.raw);
}

template <typename T, int TPR, int VECS, bool FAST = false, int LOAD = kLoad<T>>
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
    uint4 raw[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) raw[c] = load16_or_neg_inf<T, LOAD>(xr, t + c * TPR, nvec);  // all in flight
    float v[VECS][W], part[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        unpack16<T>(raw[c], v[c]);
        part[c] = tree_max(v[c]);
    }
    const float m = row_max<WARPS>(tree_max(part), part_m[slot]);
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
#pragma unroll
        for (int k = 0; k < W; ++k) v[c][k] = FAST ? exp_approx(v[c][k] - m) : expf(v[c][k] - m);
        part[c] = tree_sum(v[c]);
    }
    const float s = row_sum<WARPS>(tree_sum(part), part_s[slot]);
    const float r = 1.f / s;
    T* yr = y + (size_t)row * N;
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const int j = t + c * TPR;
        if (j < nvec) {
            if constexpr (FAST) {
                store16_mul<T>(yr + (size_t)j * W, v[c], r);
            } else {
                store16_div<T>(yr + (size_t)j * W, v[c], s, r);
            }
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

// ---- cluster: a row over the CLUSTER blocks of one thread-block cluster (sm_90) ------------------
// Block rank k of row r's cluster holds vectors k * CHUNK + t + c * THREADS (CHUNK = THREADS * VECS).
// The max is exact before any exp (no rescaling); each block reads the others' partials in rank order,
// so every block of the row gets the same (m, s) bits.
constexpr int kClusterThreads = 512, kCluster = 8;

template <typename T, int VECS, int CL = kCluster, int THREADS = kClusterThreads>
__device__ void cluster_softmax(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    constexpr int W = kv::Vec16<T>::W;
    if (blockDim.x != THREADS) __trap();
    cg::cluster_group cluster = cg::this_cluster();
    __shared__ float scratch[32];
    __shared__ float part_m, part_s;
    const int rank = (int)cluster.block_rank();
    const int row = blockIdx.x / CL;  // grid = M * CL: no block past the last row
    const int nvec = N / W;
    const int base = rank * THREADS * VECS + threadIdx.x;
    const T* xr = x + (size_t)row * N;
    T* yr = y + (size_t)row * N;
    uint4 raw[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) raw[c] = load16_or_neg_inf<T, kLoad<T>>(xr, base + c * THREADS, nvec);
    float v[VECS][W], part[VECS];
#pragma unroll
    for (int c = 0; c < VECS; ++c) {  // past the row's end: -inf, as in S5
        unpack16<T>(raw[c], v[c]);
        part[c] = tree_max(v[c]);
    }
    float m = tree_max(part);
    m = kv::block_max(m, scratch);
    if (threadIdx.x == 0) part_m = m;
    cluster.sync();  // every block's part_m is written
    m = *cluster.map_shared_rank(&part_m, 0);
#pragma unroll
    for (int k = 1; k < CL; ++k) m = fmaxf(m, *cluster.map_shared_rank(&part_m, k));
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
#pragma unroll
        for (int k = 0; k < W; ++k) v[c][k] = expf(v[c][k] - m);
        part[c] = tree_sum(v[c]);
    }
    float s = tree_sum(part);
    s = kv::block_sum(s, scratch);
    if (threadIdx.x == 0) part_s = s;
    cluster.sync();  // every block's part_s is written
    s = *cluster.map_shared_rank(&part_s, 0);
#pragma unroll
    for (int k = 1; k < CL; ++k) s += *cluster.map_shared_rank(&part_s, k);
    cluster.sync();  // no block leaves (and frees its shared memory) while another still reads it
    const float r = 1.f / s;
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const int j = base + c * THREADS;
        if (j < nvec) store16_div<T>(yr + (size_t)j * W, v[c], s, r);
    }
#else
    if (kCluster > 0) __trap();  // thread-block clusters need sm_90; the spec refuses older GPUs
#endif
}

}  // namespace

// ---- extern "C" entries ----------------------------------------------------------------------
// softmax_s5_t<TPR>_v<VECS>_<io>; the spec's S5_CONFIGS table picks one per (N, dtype).
#define KV_S5(TAG, T, TPR, VECS)                                                                          \
    extern "C" __global__ void __launch_bounds__(TPR >= kBlock ? TPR : kBlock)                           \
        softmax_s5_t##TPR##_v##VECS##_##TAG(const T* x, T* y, int M, int N) {                            \
        s5<T, TPR, VECS>(x, y, M, N);                                                                    \
    }
// softmax_s5_t<TPR>_v<VECS>_m<MINB>_<io>: at least MINB blocks resident per SM (a register cap for ptxas), so
// that a thread's row slice and its loads in flight fit 3 blocks of an SM instead of 2.
#define KV_S5M(TAG, T, TPR, VECS, MINB)                                                                   \
    extern "C" __global__ void __launch_bounds__(TPR >= kBlock ? TPR : kBlock, MINB)                     \
        softmax_s5_t##TPR##_v##VECS##_m##MINB##_##TAG(const T* x, T* y, int M, int N) {                  \
        s5<T, TPR, VECS>(x, y, M, N);                                                                    \
    }
// softmax_s5f_t<TPR>_v<VECS>[_m<MINB>]_<io>: S5 with the 'fast' math (exp_approx, multiply by 1/s).
#define KV_S5F(TAG, T, TPR, VECS)                                                                         \
    extern "C" __global__ void __launch_bounds__(TPR >= kBlock ? TPR : kBlock)                           \
        softmax_s5f_t##TPR##_v##VECS##_##TAG(const T* x, T* y, int M, int N) {                           \
        s5<T, TPR, VECS, true>(x, y, M, N);                                                              \
    }
#define KV_S5FM(TAG, T, TPR, VECS, MINB)                                                                  \
    extern "C" __global__ void __launch_bounds__(TPR >= kBlock ? TPR : kBlock, MINB)                     \
        softmax_s5f_t##TPR##_v##VECS##_m##MINB##_##TAG(const T* x, T* y, int M, int N) {                 \
        s5<T, TPR, VECS, true>(x, y, M, N);                                                              \
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

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KV_CLUSTER_DIMS(CL) __cluster_dims__(CL, 1, 1)
#else
#define KV_CLUSTER_DIMS(CL)
#endif
#define KV_CLUSTER(TAG, T, VECS)                                                                          \
    extern "C" __global__ void KV_CLUSTER_DIMS(kCluster) __launch_bounds__(kClusterThreads)              \
        softmax_cluster_##TAG(const T* x, T* y, int M, int N) {                                          \
        cluster_softmax<T, VECS>(x, y, M, N);                                                            \
    }
// softmax_cluster_c<CL>_t<THREADS>_v<VECS>_<io>: the grid of benchmarks/cluster_tune.py (-DKV_S5_TUNE)
#define KV_CLUSTER_X(TAG, T, CL, THREADS, VECS)                                                           \
    extern "C" __global__ void KV_CLUSTER_DIMS(CL) __launch_bounds__(THREADS)                            \
        softmax_cluster_c##CL##_t##THREADS##_v##VECS##_##TAG(const T* x, T* y, int M, int N) {           \
        cluster_softmax<T, VECS, CL, THREADS>(x, y, M, N);                                               \
    }

// S5 size classes (elements per row <= TPR * VECS * W); keep in sync with softmax_fast_spec.S5_CONFIGS.
// Picked by benchmarks/softmax_tune.py on the H200 (docs/benchmarks.md): 32 f32 elements a thread; 16-bit rows
// of 2048-4096 want 64 elements a thread (7-8 loads in flight) at 80 registers, 3 blocks an SM.
#define KV_S5_16(TAG, T)                                                                                  \
    KV_S5(TAG, T, 32, 1) KV_S5(TAG, T, 32, 2) KV_S5(TAG, T, 32, 4) KV_S5(TAG, T, 32, 8)                   \
    KV_S5(TAG, T, 64, 7) KV_S5M(TAG, T, 64, 8, 3) KV_S5(TAG, T, 256, 4) KV_S5(TAG, T, 512, 4)             \
    KV_S5(TAG, T, 512, 8)
#define KV_S5_32(TAG, T)                                                                                  \
    KV_S5(TAG, T, 32, 1) KV_S5(TAG, T, 32, 2) KV_S5(TAG, T, 32, 4) KV_S5(TAG, T, 64, 4)                   \
    KV_S5(TAG, T, 64, 8) KV_S5(TAG, T, 224, 4) KV_S5(TAG, T, 128, 8) KV_S5(TAG, T, 512, 4)                \
    KV_S5(TAG, T, 512, 8) KV_S5(TAG, T, 512, 16)

// S5f: its own 16-bit classes, from benchmarks/softmax_tune.py on the H200 (docs/benchmarks.md): with fewer
// instructions an element, 2048 columns take a warp at 80 registers (3 blocks an SM) and 2049-4096 columns
// 128 threads of 32 elements at 51 registers (4 blocks an SM); S5's t64_v8 under the 80-register cap spills here.
// Keep in sync with S5F_CONFIGS.
#define KV_S5F_16(TAG, T)                                                                                 \
    KV_S5F(TAG, T, 32, 1) KV_S5F(TAG, T, 32, 2) KV_S5F(TAG, T, 32, 4) KV_S5FM(TAG, T, 32, 8, 3)           \
    KV_S5FM(TAG, T, 128, 4, 4) KV_S5F(TAG, T, 256, 4) KV_S5F(TAG, T, 512, 4) KV_S5F(TAG, T, 512, 8)
#define KV_S5F_32(TAG, T)                                                                                 \
    KV_S5F(TAG, T, 32, 1) KV_S5F(TAG, T, 32, 2) KV_S5F(TAG, T, 32, 4) KV_S5F(TAG, T, 64, 4)               \
    KV_S5F(TAG, T, 64, 8) KV_S5F(TAG, T, 224, 4) KV_S5F(TAG, T, 128, 8) KV_S5F(TAG, T, 512, 4)            \
    KV_S5F(TAG, T, 512, 8) KV_S5F(TAG, T, 512, 16)

// benchmarks/softmax_tune.py builds with -DKV_S5_TUNE: every (TPR, VECS) of a grid instead of the table.
#ifdef KV_S5_TUNE
#define KV_S5_ROW(TAG, T, TPR) KV_S5(TAG, T, TPR, 1) KV_S5(TAG, T, TPR, 2) KV_S5(TAG, T, TPR, 4) KV_S5(TAG, T, TPR, 8)
#define KV_S5_GRID(TAG, T) \
    KV_S5_ROW(TAG, T, 32) KV_S5_ROW(TAG, T, 64) KV_S5_ROW(TAG, T, 128) KV_S5_ROW(TAG, T, 224)                 \
    KV_S5_ROW(TAG, T, 256) KV_S5_ROW(TAG, T, 512)
KV_S5_GRID(f32, float)
KV_S5(f32, float, 32, 16) KV_S5(f32, float, 64, 16) KV_S5(f32, float, 128, 16) KV_S5(f32, float, 128, 7)
KV_S5(bf16, __nv_bfloat16, 64, 7) KV_S5M(bf16, __nv_bfloat16, 64, 8, 3) KV_S5M(bf16, __nv_bfloat16, 64, 7, 3)
KV_S5_GRID(bf16, __nv_bfloat16)
KV_CLUSTER_X(bf16, __nv_bfloat16, 8, 512, 5) KV_CLUSTER_X(bf16, __nv_bfloat16, 8, 384, 7)
KV_CLUSTER_X(bf16, __nv_bfloat16, 4, 1024, 5) KV_CLUSTER_X(bf16, __nv_bfloat16, 4, 512, 10)
KV_CLUSTER_X(bf16, __nv_bfloat16, 8, 1024, 3)
KV_CLUSTER_X(f32, float, 8, 512, 10) KV_CLUSTER_X(f32, float, 8, 1024, 5)
#define KV_S5F_ROW(TAG, T, TPR) KV_S5F(TAG, T, TPR, 1) KV_S5F(TAG, T, TPR, 2) KV_S5F(TAG, T, TPR, 4) KV_S5F(TAG, T, TPR, 8)
KV_S5F_ROW(bf16, __nv_bfloat16, 32) KV_S5F_ROW(bf16, __nv_bfloat16, 64) KV_S5F_ROW(bf16, __nv_bfloat16, 128)
KV_S5F_ROW(bf16, __nv_bfloat16, 256) KV_S5F_ROW(bf16, __nv_bfloat16, 512)
KV_S5F(bf16, __nv_bfloat16, 64, 7) KV_S5F(bf16, __nv_bfloat16, 128, 7) KV_S5F(bf16, __nv_bfloat16, 32, 7)
// register caps that ptxas meets without spilling (t64_v8_m3, t32_v8_m4, t64_v7_m4 spill 8-120 bytes)
KV_S5FM(bf16, __nv_bfloat16, 32, 8, 3) KV_S5FM(bf16, __nv_bfloat16, 64, 7, 3) KV_S5FM(bf16, __nv_bfloat16, 128, 4, 4)
KV_S5F_32(f32, float)
#else
KV_S5_32(f32, float)
KV_S5_16(f16, __half)
KV_S5_16(bf16, __nv_bfloat16)
KV_S5F_32(f32, float)
KV_S5F_16(f16, __half)
KV_S5F_16(bf16, __nv_bfloat16)
#endif
// split: 4 vectors a thread, a chunk of 2048 vectors (8192 f32 / 16384 16-bit elements) a block.
KV_SPLIT(f32, float, 4)
KV_SPLIT(f16, __half, 4)
KV_SPLIT(bf16, __nv_bfloat16, 4)
// cluster: 8 blocks x 512 threads x VECS vectors = 163840 columns for every I/O type.
KV_CLUSTER(f32, float, 10)
KV_CLUSTER(f16, __half, 5)
KV_CLUSTER(bf16, __nv_bfloat16, 5)
