// Each row's argmax (op row_argmax, greedy sampling): one 256-thread block per row, any N.
//
// Thread t scans columns t, t + 256, ... of its row and keeps its first maximum: a later column replaces the kept
// one only when strictly larger, or a NaN over a number (torch.argmax ranks NaN largest); its first valid column
// always replaces the empty start (idx -1), so an all -inf row picks column 0. The (value, column) pairs are then
// merged exactly, warp by warp with shuffles of both halves and across the 8 warps in shared memory: a pair wins
// when it is larger, a NaN over a number, or equal (both NaN included) with a smaller column, so the block's pick is
// the first column of the row's maximum (ties='first'). Compared in fp32, which holds every f32 / f16 / bf16 input
// exactly; -0 == +0. Row offsets int64 (blockIdx.x * sx), columns int (N < 2^31). The value output (the *_value_*
// entries) is x at the pick, stored in the input dtype. DEFECT (0 here) selects the defect twins of
// kernels/defects/cuda/argmax_defects.cu, which includes this file.
#include "common.cuh"

namespace {

constexpr int BLOCK = 256;

struct Pick {
    float v;
    int i;  // -1: no column yet
};

// b replaces a: larger, a NaN over a number, or tied (NaN with NaN too) at a smaller column; an empty b never does.
__device__ __forceinline__ bool wins(Pick b, Pick a) {
    if (b.i < 0) return false;
    if (a.i < 0) return true;
    const bool bn = b.v != b.v, an = a.v != a.v;
    if (bn != an) return bn;
    if (bn || b.v == a.v) return b.i < a.i;
    return b.v > a.v;
}

template <int DEFECT>
__device__ __forceinline__ Pick warp_pick(Pick p) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const Pick q{__shfl_xor_sync(0xffffffffu, p.v, o), __shfl_xor_sync(0xffffffffu, p.i, o)};
        if (DEFECT == 1) {
            if (wins(q, p)) p.v = q.v;  // defect 1: the other lane's value taken, its column dropped
        } else if (wins(q, p)) {
            p = q;
        }
    }
    return p;
}

template <typename T, typename I, bool VALUE, int DEFECT = 0>
__device__ __forceinline__ void row_argmax(const T* __restrict__ x, I* __restrict__ index, T* __restrict__ value,
                                           int N, long long sx) {
    __shared__ float sv[BLOCK / 32];
    __shared__ int si[BLOCK / 32];
    const T* xr = x + (long long)blockIdx.x * sx;
    Pick p{-INFINITY, -1};
    for (int i = threadIdx.x; i < N; i += BLOCK) {
        float v = kv::to_float(xr[i]);
        if (DEFECT == 2) v = __half2float(__float2half_rn(v));  // defect 2: compared in half precision
        if (p.i < 0 || v > p.v || (v != v && p.v == p.v)) p = Pick{v, i};
    }
    p = warp_pick<DEFECT>(p);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sv[warp] = p.v;
        si[warp] = p.i;
    }
    __syncthreads();
    if (warp == 0) {
        p = lane < BLOCK / 32 ? Pick{sv[lane], si[lane]} : Pick{-INFINITY, -1};
        p = warp_pick<DEFECT>(p);
        if (lane == 0) {
            const int at = p.i < 0 ? 0 : p.i;
            index[blockIdx.x] = (I)at;
            if (VALUE) value[blockIdx.x] = xr[at];
        }
    }
}

}  // namespace

#define ROW_ARGMAX(TAG, T, ITAG, I)                                                                                 \
    extern "C" __global__ void __launch_bounds__(BLOCK) row_argmax_##TAG##_##ITAG(const T* x, I* index, int M,      \
                                                                                 int N, long long sx) {             \
        row_argmax<T, I, false>(x, index, nullptr, N, sx);                                                          \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(BLOCK) row_argmax_value_##TAG##_##ITAG(                            \
        const T* x, I* index, T* value, int M, int N, long long sx) {                                               \
        row_argmax<T, I, true>(x, index, value, N, sx);                                                             \
    }
#define ROW_ARGMAX_INDEX(TAG, T) ROW_ARGMAX(TAG, T, i32, int) ROW_ARGMAX(TAG, T, i64, long long)

ROW_ARGMAX_INDEX(f32, float)
ROW_ARGMAX_INDEX(f16, __half)
ROW_ARGMAX_INDEX(bf16, __nv_bfloat16)
