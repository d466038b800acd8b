// The seed tutorial's warp-per-row online softmax (000: softmax_warp_online_kernel), bf16 / f32 I/O,
// with one -inf guard removed each. Lane j holds columns j, j + 32, ... in registers and keeps its
// own (m, l); a 32-lane xor butterfly merges the states. Correct twin: cuda-online-softmax-warp
// (kernels/cuda/online_softmax.cu, guards in softmax_common.cuh).
//   online_softmax_warp_no_merge_guard_*: the merge computes l = la*exp(ma - m) + lb*exp(mb - m)
//     even when both sides are empty (m = -inf): exp(-inf - -inf) = NaN. Empty lanes exist for
//     d < 32 but two of them meet only for d <= 15 (lane j pairs with j ^ 16 first): NaN rows there.
//   online_softmax_warp_no_update_guard_*: the per-element update computes exp(v - m_new) while the
//     lane has seen only -inf (m_new = -inf): l = NaN. The merge keeps the NaN (NaN * exp(-inf) is
//     NaN): a row of d = 32 with one masked -inf comes out NaN.
#include "../../cuda/softmax_common.cuh"

#define WARP_ROWS 4

namespace {

template <bool GUARD_MERGE>
__device__ __forceinline__ void merge(float& m, float& l, float mo, float lo) {
    const float m_new = kv::nanmax(m, mo);
    if (GUARD_MERGE && m_new == -INFINITY) {
        l = 0.f;  // both sides empty: stay empty
    } else {
        l = l * expf(m - m_new) + lo * expf(mo - m_new);
    }
    m = m_new;
}

template <typename T, int ITEMS, bool GUARD_UPDATE, bool GUARD_MERGE>
__device__ void warp_row(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARP_ROWS + (threadIdx.x >> 5);
    if (row >= M) return;  // uniform per warp
    const T* xr = x + (size_t)row * N;
    T* yr = y + (size_t)row * N;
    float v[ITEMS];
    float m = -INFINITY, l = 0.f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int c = lane + i * 32;
        v[i] = (c < N) ? kv::to_float(xr[c]) : -INFINITY;
        if (c < N) {
            const float m_new = kv::nanmax(m, v[i]);
            l = l * expf(m - m_new) + expf(v[i] - m_new);
            if (GUARD_UPDATE && m_new == -INFINITY) l = 0.f;  // only -inf so far: stay empty
            m = m_new;
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float mo = __shfl_xor_sync(0xffffffffu, m, o), lo = __shfl_xor_sync(0xffffffffu, l, o);
        merge<GUARD_MERGE>(m, l, mo, lo);
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int c = lane + i * 32;
        if (c < N) yr[c] = kv::from_float<T>(kv::softmax_out(v[i], m, l));
    }
}

}  // namespace

#define KV_DEFECT(TAG, T)                                                                                 \
    extern "C" __global__ void __launch_bounds__(WARP_ROWS * 32)                                         \
        online_softmax_warp_no_merge_guard_d1024_##TAG(const T* x, T* y, int M, int N) {                 \
        warp_row<T, 32, true, false>(x, y, M, N);                                                        \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(WARP_ROWS * 32)                                         \
        online_softmax_warp_no_update_guard_d1024_##TAG(const T* x, T* y, int M, int N) {                \
        warp_row<T, 32, false, true>(x, y, M, N);                                                        \
    }

KV_DEFECT(f32, float)
KV_DEFECT(bf16, __nv_bfloat16)
