// Sampling's top-k filters (ops top_k_renorm_probs, top_k_mask_logits): one 256-thread block per row.
//
// Thread t holds elements t + 256 j (j < VPT; N <= 256 VPT, VPT = 1 .. 32) in registers, with signed int32 keys
// whose order is the float order (negative floats' low 31 bits flipped; -0 read as +0, so float ties share a key;
// NaN the largest key, as torch.topk orders it). The exact k-th largest key T is the largest with at least k keys >= T: 32 rounds of a binary search
// over the 2^32 keys, each a block count (exact in float up to 2^24 elements). Kept: key >= T and not NaN, every
// tie at the k-th largest (ties='keep_all'); k >= N keeps the row. Renorm: the kept values summed in fp32 in a fixed
// order and divided by max(sum, sum_floor) (sum_floor 0: by the sum); mask: the value itself, -inf elsewhere.
// Rows at x + row * sx, outputs at y + row * sy (int64 offsets).
#include "common.cuh"

namespace {

constexpr int BLOCK = 256;

__device__ __forceinline__ int order_key(float v) {
    if (v != v) return 0x7fffffff;
    const int bits = __float_as_int(v == 0.f ? 0.f : v);
    return bits >= 0 ? bits : bits ^ 0x7fffffff;
}

template <typename T, bool RENORM, int VPT>
__device__ __forceinline__ void top_k_filter(const T* __restrict__ x, T* __restrict__ y, int N, int k, float floor,
                                             long long sx, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* yr = y + (long long)blockIdx.x * sy;
    float v[VPT];
    int key[VPT];
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
        const int i = threadIdx.x + BLOCK * j;
        v[j] = i < N ? kv::to_float(xr[i]) : 0.f;
        key[j] = order_key(v[j]);
    }
    long long lo = -2147483648LL, hi = 2147483647LL;  // at least k keys >= lo; fewer than k keys > hi
    const bool all = k >= N;
    if (!all) {
#pragma unroll 1
        for (int round = 0; round < 32; ++round) {
            const long long mid = (lo + hi + 1) >> 1;
            float c = 0.f;
#pragma unroll
            for (int j = 0; j < VPT; ++j) c += (threadIdx.x + BLOCK * j < N && key[j] >= mid) ? 1.f : 0.f;
            if (kv::block_sum(c, scratch) >= (float)k) lo = mid; else hi = mid - 1;
        }
    }
    bool kept[VPT];
#pragma unroll
    for (int j = 0; j < VPT; ++j) kept[j] = all || (key[j] >= lo && v[j] == v[j]);
    if (RENORM) {
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < VPT; ++j) s += (threadIdx.x + BLOCK * j < N && kept[j]) ? v[j] : 0.f;
        s = kv::block_sum(s, scratch);
        if (floor > 0.f && s < floor) s = floor;  // not fmaxf: a NaN sum stays NaN, as torch.clamp(s, min=floor)
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int i = threadIdx.x + BLOCK * j;
            if (i < N) yr[i] = kv::from_float<T>(kept[j] ? v[j] / s : 0.f);
        }
    } else {
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int i = threadIdx.x + BLOCK * j;
            if (i < N) yr[i] = kv::from_float<T>(kept[j] ? v[j] : -INFINITY);
        }
    }
}

}  // namespace

#define TOPK_FILTER(TAG, T, VPT)                                                                                    \
    extern "C" __global__ void __launch_bounds__(BLOCK) top_k_renorm_probs_##TAG##_v##VPT(                          \
        const T* x, T* y, int M, int N, int k, float floor, long long sx, long long sy) {                           \
        top_k_filter<T, true, VPT>(x, y, N, k, floor, sx, sy);                                                      \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(BLOCK) top_k_mask_logits_##TAG##_v##VPT(                           \
        const T* x, T* y, int M, int N, int k, long long sx, long long sy) {                                         \
        top_k_filter<T, false, VPT>(x, y, N, k, 0.f, sx, sy);                                                       \
    }
#define TOPK_VPTS(TAG, T) \
    TOPK_FILTER(TAG, T, 1) TOPK_FILTER(TAG, T, 2) TOPK_FILTER(TAG, T, 4) TOPK_FILTER(TAG, T, 8) TOPK_FILTER(TAG, T, 16) \
    TOPK_FILTER(TAG, T, 32)

TOPK_VPTS(f32, float)
TOPK_VPTS(f16, __half)
TOPK_VPTS(bf16, __nv_bfloat16)
