// A row held in registers as 16-byte vectors over TPR threads (a multiple of 32), 256 / TPR rows per block when
// a row takes fewer threads: the layout of softmax_fast.cu's S5, which uses these helpers, and of layernorm_rows.cu.
// Thread t of a row holds vectors t, t + TPR, ... (coalesced across the row's warps).
#pragma once
#include "common.cuh"

namespace kvrows {

constexpr int kBlock = 256;  // block size when a row takes fewer threads: ROWS = kBlock / TPR

template <int TPR>
__host__ __device__ constexpr int rows_per_block() { return TPR >= kBlock ? 1 : kBlock / TPR; }

template <typename T>
using Vec16 = kv::Vec16<T>;

template <typename T>
__device__ __forceinline__ void unpack16(const uint4& raw, float (&out)[Vec16<T>::W]) {
    typename Vec16<T>::U u;
    u.raw = raw;
#pragma unroll
    for (int k = 0; k < Vec16<T>::W; ++k) out[k] = kv::to_float(u.e[k]);
}

// Vector j of a row, or zeros past its nvec vectors.
template <typename T>
__device__ __forceinline__ uint4 load16_or_zero(const T* xr, int j, int nvec) {
    return j < nvec ? __ldg(reinterpret_cast<const uint4*>(xr + (size_t)j * Vec16<T>::W)) : make_uint4(0u, 0u, 0u, 0u);
}

// Pairwise sum over a thread's registers: a dependency chain of log2(n) instead of n.
template <int N>
__device__ __forceinline__ float tree_sum(const float (&a)[N]) {
    if constexpr (N == 1) {
        return a[0];
    } else {
        float b[(N + 1) / 2];
#pragma unroll
        for (int i = 0; i < N / 2; ++i) b[i] = a[2 * i] + a[2 * i + 1];
        if constexpr (N % 2) b[N / 2] = a[N - 1];
        return tree_sum(b);
    }
}

// Row-wide reduction over TPR threads (WARPS = TPR / 32): shuffles, then, when the row spans several warps, one
// barrier and a read of the row's per-warp partials in a fixed order (every thread of the row gets the same bits).
// `part` is this row's WARPS-float slice of shared memory, used by this one reduction only.
struct MaxOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
    __device__ __forceinline__ float warp(float v) const { return kv::warp_max(v); }
};
struct SumOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
    __device__ __forceinline__ float warp(float v) const { return kv::warp_sum(v); }
};
template <int WARPS, typename Op>
__device__ __forceinline__ float row_reduce(float v, float* part, Op op) {
    v = op.warp(v);
    if constexpr (WARPS == 1) {
        return v;
    } else {
        const int w = (threadIdx.x >> 5) % WARPS;
        if ((threadIdx.x & 31) == 0) part[w] = v;
        __syncthreads();
        v = part[0];
#pragma unroll
        for (int k = 1; k < WARPS; ++k) v = op(v, part[k]);
        return v;
    }
}
template <int WARPS>
__device__ __forceinline__ float row_sum(float v, float* part) { return row_reduce<WARPS>(v, part, SumOp{}); }

}  // namespace kvrows
