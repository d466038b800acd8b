// Attention-state merge (op merge_attn_states): one warp per row, four rows per 128-thread block.
//
// Every lane reads the row's two lse (float32) and forms the weights in fp32: m = max(lse_a, lse_b),
// w = exp(lse - m) (exp2 for base-2 states), p = w / (w_a + w_b); then lanes stride over the row's N values,
// v = x·p_a + v_b·p_b, and lane 0 stores lse = m + log(w_a + w_b) (log2 for base 2). A -inf side has w = 0 and
// the other passes through; two empty states give NaN, or with empty_zero v = 0 and lse = -inf.
#include "common.cuh"

namespace {

template <typename T>
__device__ __forceinline__ void merge_row(const T* __restrict__ va, const float* __restrict__ lse_a,
                                          const T* __restrict__ vb, const float* __restrict__ lse_b, T* __restrict__ v,
                                          float* __restrict__ lse, int M, int N, int base2, int empty_zero,
                                          long long s_va, long long s_vb, long long s_v) {
    const int lane = threadIdx.x & 31;
    const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= M) return;
    const float la = lse_a[row], lb = lse_b[row];
    const float m = (la != la || lb != lb) ? la + lb : fmaxf(la, lb);  // a NaN lse propagates (torch.maximum)
    const float wa = base2 ? exp2f(la - m) : expf(la - m);
    const float wb = base2 ? exp2f(lb - m) : expf(lb - m);
    const float s = wa + wb;
    const float pa = wa / s, pb = wb / s;
    const bool empty = empty_zero && m == -INFINITY;
    const T* ra = va + row * s_va;
    const T* rb = vb + row * s_vb;
    T* rv = v + row * s_v;
    for (int j = lane; j < N; j += 32) {
        const float y = empty ? 0.f : kv::to_float(ra[j]) * pa + kv::to_float(rb[j]) * pb;
        rv[j] = kv::from_float<T>(y);
    }
    if (lane == 0) lse[row] = empty ? -INFINITY : m + (base2 ? log2f(s) : logf(s));
}

}  // namespace

#define MERGE_ENTRY(TAG, T)                                                                                       \
    extern "C" __global__ void __launch_bounds__(128) merge_attn_states_##TAG(                                    \
        const T* __restrict__ va, const float* __restrict__ lse_a, const T* __restrict__ vb,                      \
        const float* __restrict__ lse_b, T* __restrict__ v, float* __restrict__ lse, int M, int N, int base2,      \
        int empty_zero, long long s_va, long long s_vb, long long s_v) {                                           \
        merge_row<T>(va, lse_a, vb, lse_b, v, lse, M, N, base2, empty_zero, s_va, s_vb, s_v);                     \
    }

MERGE_ENTRY(f32, float)
MERGE_ENTRY(f16, __half)
MERGE_ENTRY(bf16, __nv_bfloat16)
