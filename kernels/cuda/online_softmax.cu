// Online softmax (running max m and sum s = sum exp(x - m), rescaled when m grows), fp32 math.
//   warp-per-row: one warp per row, kWarpRows rows per block, the row held in registers as ITEMS
//     elements per lane (size classes d <= 1024 / 2048 / 4096); I/O f32, bf16.
//   block-per-row: any d; each thread runs (m, s) over its strided columns, block merge, then a
//     second read of x to normalize; I/O f32, f16, bf16.
// The -inf guards live in softmax_common.cuh (ms_push / ms_merge): lanes with no element
// (d < 32) stay (m = -inf, s = 0) and merge as exact zeros; masked elements add nothing; a fully
// -inf row ends with s = 0 and comes out NaN like torch; NaN / +inf in a row give a NaN row.
// Rows of x and y lie sx and sy elements apart (the launch passes each row stride, int64; contiguous rows: N).
#include "softmax_common.cuh"

namespace {

constexpr int kWarpRows = 4;  // rows (warps) per block of the warp kernel: 128 threads
constexpr int kBlockThreads = 256;

template <typename T, int ITEMS>
__device__ void warp_row(const T* __restrict__ x, T* __restrict__ y, int M, int N, long long sx, long long sy) {
    if (blockDim.x != kWarpRows * 32) __trap();  // a wrong launch would skip rows silently
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarpRows + (threadIdx.x >> 5);
    if (row >= M) return;  // uniform per warp, and the warp kernel never syncs the block
    const T* xr = x + (long long)row * sx;
    T* yr = y + (long long)row * sy;

    float v[ITEMS];
    kv::MS a = kv::ms_empty();
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int c = lane + i * 32;  // coalesced: a warp reads 32 consecutive elements
        v[i] = (c < N) ? kv::to_float(xr[c]) : -INFINITY;
        if (c < N) kv::ms_push(a, v[i]);
    }
    a = kv::warp_ms(a);  // every lane ends with the same (m, s), bit for bit
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const int c = lane + i * 32;
        if (c < N) yr[c] = kv::from_float<T>(kv::softmax_out(v[i], a.m, a.s));
    }
}

template <typename T>
__device__ void block_row(const T* __restrict__ x, T* __restrict__ y, int M, int N, long long sx, long long sy) {
    __shared__ float scratch_m[32], scratch_s[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* yr = y + (long long)blockIdx.x * sy;
    kv::MS a = kv::ms_empty();
    for (int c = threadIdx.x; c < N; c += blockDim.x) kv::ms_push(a, kv::to_float(xr[c]));
    a = kv::block_ms(a, scratch_m, scratch_s);
    for (int c = threadIdx.x; c < N; c += blockDim.x)
        yr[c] = kv::from_float<T>(kv::softmax_out(kv::to_float(xr[c]), a.m, a.s));
}

}  // namespace

// Size classes: ITEMS = D / 32. Keep in sync with online_softmax_spec.WARP_CLASSES.
#define KV_WARP(TAG, T, D)                                                                                \
    extern "C" __global__ void __launch_bounds__(kWarpRows * 32)                                         \
        online_softmax_warp_d##D##_##TAG(const T* x, T* y, int M, int N, long long sx, long long sy) {  \
        warp_row<T, D / 32>(x, y, M, N, sx, sy);                                                         \
    }
#define KV_WARP_ALL(TAG, T) KV_WARP(TAG, T, 1024) KV_WARP(TAG, T, 2048) KV_WARP(TAG, T, 4096)

#define KV_BLOCK(TAG, T)                                                                                  \
    extern "C" __global__ void __launch_bounds__(kBlockThreads)                                          \
        online_softmax_block_##TAG(const T* x, T* y, int M, int N, long long sx, long long sy) {         \
        block_row<T>(x, y, M, N, sx, sy);                                                                \
    }

KV_WARP_ALL(f32, float)
KV_WARP_ALL(bf16, __nv_bfloat16)
KV_BLOCK(f32, float)
KV_BLOCK(f16, __half)
KV_BLOCK(bf16, __nv_bfloat16)
