// MoE routing (op topk_softmax): one warp per row of E gating logits, four rows per 128-thread block.
//
// Lane l holds experts l, l + 32, ..., l + 32 (VPT - 1) in registers (E <= 32 VPT; the entries are VPT = 1, 2, 4,
// 8, 16: E up to 512). Gates in fp32: softmax over all E (warp max, exp(x - m), warp sum, one division) or sigmoid
// 1 / (1 + exp(-x)). Then k rounds (k <= 32) of a warp argmax over (key, index): the largest gate, the smaller
// index among equal gates (vLLM's tie-break), a NaN gate ranked below every number; the winner's slot is set to
// -inf before the next round. Lane j keeps pick j; renormalized, the k values are divided by their warp sum; lanes
// j < k store pick j (coalesced). Rows, tensors and strides as the spec passes them (int64 row offsets).
#include "common.cuh"

namespace {

constexpr unsigned FULL = 0xffffffffu;

template <typename T, typename I, int VPT>
__device__ __forceinline__ void topk_softmax_row(const T* __restrict__ x, float* __restrict__ values,
                                                 I* __restrict__ indices, int M, int E, int k, int renormalize,
                                                 int sigmoid, long long sx, long long sv, long long si) {
    const int lane = threadIdx.x & 31;
    const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= M) return;  // warp-uniform: the whole warp leaves together
    const T* xr = x + row * sx;
    float g[VPT], key[VPT];
#pragma unroll
    for (int v = 0; v < VPT; ++v) {
        const int e = lane + 32 * v;
        g[v] = e < E ? kv::to_float(xr[e]) : -INFINITY;
    }
    if (sigmoid) {
#pragma unroll
        for (int v = 0; v < VPT; ++v) g[v] = 1.f / (1.f + expf(-g[v]));
    } else {
        float m = -INFINITY;
#pragma unroll
        for (int v = 0; v < VPT; ++v) m = fmaxf(m, g[v]);
        m = kv::warp_max(m);
        float s = 0.f;
#pragma unroll
        for (int v = 0; v < VPT; ++v) {
            g[v] = lane + 32 * v < E ? expf(g[v] - m) : 0.f;
            s += g[v];
        }
        s = kv::warp_sum(s);
#pragma unroll
        for (int v = 0; v < VPT; ++v) g[v] = g[v] / s;
    }
#pragma unroll
    for (int v = 0; v < VPT; ++v) key[v] = lane + 32 * v < E ? (g[v] != g[v] ? -0.5f : g[v]) : -INFINITY;

    float mine = 0.f;
    int mine_idx = 0;
    for (int j = 0; j < k; ++j) {
        float bk = -INFINITY, bg = 0.f;
        int bi = 0x7fffffff;
#pragma unroll
        for (int v = 0; v < VPT; ++v) {  // ascending expert: '>' keeps the smaller index of equal keys
            if (key[v] > bk) {
                bk = key[v];
                bi = lane + 32 * v;
                bg = g[v];
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float ok = __shfl_xor_sync(FULL, bk, o);
            const int oi = __shfl_xor_sync(FULL, bi, o);
            const float og = __shfl_xor_sync(FULL, bg, o);
            if (ok > bk || (ok == bk && oi < bi)) {
                bk = ok;
                bi = oi;
                bg = og;
            }
        }
        if (lane == j) {
            mine = bg;
            mine_idx = bi;
        }
#pragma unroll
        for (int v = 0; v < VPT; ++v)
            if (lane + 32 * v == bi) key[v] = -INFINITY;
    }
    if (renormalize) mine = mine / kv::warp_sum(lane < k ? mine : 0.f);
    if (lane < k) {
        values[row * sv + lane] = mine;
        indices[row * si + lane] = (I)mine_idx;
    }
}

}  // namespace

#define TOPK_ENTRY(TAG, T, ITAG, I, VPT)                                                                          \
    extern "C" __global__ void __launch_bounds__(128, 4) topk_softmax_##TAG##_##ITAG##_v##VPT(                       \
        const T* __restrict__ x, float* __restrict__ values, I* __restrict__ indices, int M, int E, int k,          \
        int renormalize, int sigmoid, long long sx, long long sv, long long si) {                                   \
        topk_softmax_row<T, I, VPT>(x, values, indices, M, E, k, renormalize, sigmoid, sx, sv, si);                \
    }

#define TOPK_VPTS(TAG, T, ITAG, I)     \
    TOPK_ENTRY(TAG, T, ITAG, I, 1)     \
    TOPK_ENTRY(TAG, T, ITAG, I, 2)     \
    TOPK_ENTRY(TAG, T, ITAG, I, 4)     \
    TOPK_ENTRY(TAG, T, ITAG, I, 8)     \
    TOPK_ENTRY(TAG, T, ITAG, I, 16)

#define TOPK_INDEX(TAG, T)              \
    TOPK_VPTS(TAG, T, i32, int)         \
    TOPK_VPTS(TAG, T, i64, long long)

TOPK_INDEX(f32, float)
TOPK_INDEX(f16, __half)
TOPK_INDEX(bf16, __nv_bfloat16)
