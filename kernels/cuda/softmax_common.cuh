// Helpers shared by softmax.cu and online_softmax.cu: a NaN-propagating max, the online
// (m, s) state with its guarded merge, and 16-byte vector load/store.
//
// Semantics follow torch.softmax: a NaN or +inf anywhere in a row makes the whole row NaN,
// a fully -inf row is NaN, a -inf element among finite ones gives exactly 0.
#pragma once
#include "common.cuh"

namespace kv {

// fmaxf drops NaN (fmaxf(NaN, 1) = 1), which would turn a NaN row into a finite one.
__device__ __forceinline__ float nanmax(float a, float b) {
    return (a != a || b != b) ? a + b : fmaxf(a, b);
}
__device__ __forceinline__ float warp_nanmax(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = nanmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Same contract as kv::block_max (blockDim.x a multiple of 32, 32-float scratch).
__device__ __forceinline__ float block_nanmax(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_nanmax(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    v = (lane < nwarps) ? scratch[lane] : -INFINITY;
    return warp_nanmax(v);
}

// Online softmax state: m = running max, s = sum of exp(x - m). Empty state: (-inf, 0).
struct MS {
    float m, s;
};
__device__ __forceinline__ MS ms_empty() { return MS{-INFINITY, 0.f}; }

// Add one element. One expf per element: either rescale the old sum (new max) or add exp(v - m).
// Guards: a -inf element adds nothing (and keeps an empty state empty, where exp(-inf - -inf)
// would be NaN); +inf poisons s so the row comes out NaN like torch; NaN poisons both.
__device__ __forceinline__ void ms_push(MS& a, float v) {
    if (v > a.m) {
        a.s = (v == INFINITY) ? NAN : ((a.m == -INFINITY ? 0.f : a.s * expf(a.m - v)) + 1.f);
        a.m = v;
    } else if (v == -INFINITY) {
        // masked element: contributes exactly 0
    } else if (v <= a.m) {
        a.s += expf(v - a.m);  // a.m = +inf, v = +inf gives NaN, as it should
    } else {  // v or a.m is NaN
        a.m = NAN;
        a.s = NAN;
    }
}

// Merge two states. Commutative bit for bit (symmetric max, commutative add), so a butterfly
// leaves every lane with the same result. An empty side contributes exactly 0, never
// exp(-inf - -inf) = NaN; a NaN/+inf side keeps its NaN s.
__device__ __forceinline__ MS ms_merge(MS a, MS b) {
    const float m = nanmax(a.m, b.m);
    if (m == -INFINITY) return ms_empty();
    const float sa = (a.m == -INFINITY) ? 0.f : a.s * expf(a.m - m);
    const float sb = (b.m == -INFINITY) ? 0.f : b.s * expf(b.m - m);
    return MS{m, sa + sb};
}
__device__ __forceinline__ MS warp_ms(MS a) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        MS b{__shfl_xor_sync(0xffffffffu, a.m, o), __shfl_xor_sync(0xffffffffu, a.s, o)};
        a = ms_merge(a, b);
    }
    return a;
}
// Every thread of the block gets the row's state. blockDim.x a multiple of 32; scratch 2 x 32 floats.
__device__ __forceinline__ MS block_ms(MS a, float* sm, float* ss) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    a = warp_ms(a);
    __syncthreads();  // earlier readers of the scratch are done
    if (lane == 0) {
        sm[warp] = a.m;
        ss[warp] = a.s;
    }
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    a = (lane < nwarps) ? MS{sm[lane], ss[lane]} : ms_empty();
    return warp_ms(a);
}

// Final value: exp(x - m) / s with IEEE division. A fully -inf row (m = -inf, s = 0) gives
// exp(NaN) = NaN; a NaN/+inf row has s = NaN.
__device__ __forceinline__ float softmax_out(float x, float m, float s) { return expf(x - m) / s; }

// ---- 16-byte vectors (kv::Vec16, common.cuh) ------------------------------------------------
template <typename T>
__device__ __forceinline__ void load16(const T* p, float (&out)[Vec16<T>::W]) {
    typename Vec16<T>::U u;
    u.raw = *reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int k = 0; k < Vec16<T>::W; ++k) out[k] = to_float(u.e[k]);
}
template <typename T>
__device__ __forceinline__ void store16(T* p, const float (&v)[Vec16<T>::W]) {
    typename Vec16<T>::U u;
#pragma unroll
    for (int k = 0; k < Vec16<T>::W; ++k) u.e[k] = from_float<T>(v[k]);
    *reinterpret_cast<uint4*>(p) = u.raw;
}

}  // namespace kv
