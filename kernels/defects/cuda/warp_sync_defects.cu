// Warp-synchronous shared-memory defects (f32 RMSNorm, one warp per row, WARPS rows per 128-thread block), each
// next to a correct form that a race checker must clear (issue #23: all lanes of a warp storing one
// warp-uniform value, and a write ordered after other lanes' reads by the shuffles it depends on).
//   rms_warp_store_all_f32 (correct): every lane stores the xor-butterfly total (the same bits in all 32
//     lanes) to the warp's slot, __syncwarp, every lane reads it back.
//   rms_warp_down_store_all_f32: the same with a shfl.down reduction, whose total only lane 0 holds: the
//     lanes store 32 different partial sums to one slot (a WAW race; which one lands is unspecified).
//   rms_warp_rows_loop_f32 (correct): a warp walks several rows reusing its slot; the next row's store comes
//     after the other lanes' read of this row's total because it needs their shuffles (WAR ordered).
//   rms_warp_lane0_f32 (correct): lane 0 stores the total, __syncwarp, all read; __syncwarp; lane 0 stores
//     rstd over it, __syncwarp, all read.
//   rms_warp_lane0_no_syncwarp_f32: the first __syncwarp missing (lanes 1..31 read before lane 0's store: RAW).
//   rms_warp_atomic_rows_f32 (correct): a warp walks rows; per row lane 0 zeroes the slot, every lane
//     atomicAdds its partial, every lane reads the sum; __syncwarp between each step and at the end of a row.
//   rms_warp_atomic_rows_no_syncwarp_f32: the end-of-row __syncwarp missing: lane 0 zeroes the slot for the next
//     row while other lanes may still be reading this row's sum (WAR; no shuffle orders it).
#include "../../cuda/common.cuh"

#define WARPS 4

namespace {

__device__ __forceinline__ float sumsq(const float* __restrict__ xr, int N, int lane) {
    float ss = 0.f;
    for (int i = lane; i < N; i += 32) ss = fmaf(xr[i], xr[i], ss);
    return ss;
}

__device__ __forceinline__ void normalize(const float* __restrict__ xr, const float* __restrict__ w,
                                          float* __restrict__ yr, int N, int lane, float rstd) {
    for (int i = lane; i < N; i += 32) yr[i] = xr[i] * rstd * w[i];
}

__device__ __forceinline__ float rstd_of(float ss, int N, float eps) { return 1.0f / sqrtf(ss / (float)N + eps); }

template <bool DOWN>
__device__ void rms_warp_store_all(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                   int M, int N, float eps) {
    __shared__ float total[WARPS];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS + warp;
    if (row >= M) return;  // whole warps leave
    float ss = sumsq(x + (size_t)row * N, N, lane);
    if (DOWN) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_down_sync(0xffffffffu, ss, o);  // the sum is in lane 0 only
    } else {
        ss = kv::warp_sum(ss);  // xor butterfly: the same bits in every lane
    }
    total[warp] = ss;
    __syncwarp();
    normalize(x + (size_t)row * N, w, y + (size_t)row * N, N, lane, rstd_of(total[warp], N, eps));
}

__device__ void rms_warp_rows_loop(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                   int M, int N, float eps) {
    __shared__ float total[WARPS];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int row = blockIdx.x * WARPS + warp; row < M; row += gridDim.x * WARPS) {
        total[warp] = kv::warp_sum(sumsq(x + (size_t)row * N, N, lane));  // after every lane's shuffles
        __syncwarp();
        const float r = rstd_of(total[warp], N, eps);  // read before this lane's next-row shuffles
        normalize(x + (size_t)row * N, w, y + (size_t)row * N, N, lane, r);
    }
}

template <bool SYNC_STORE>
__device__ void rms_warp_lane0(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                               int M, int N, float eps) {
    __shared__ float slot[WARPS];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS + warp;
    if (row >= M) return;
    const float ss = kv::warp_sum(sumsq(x + (size_t)row * N, N, lane));
    if (lane == 0) slot[warp] = ss;
    if (SYNC_STORE) __syncwarp();
    const float t = slot[warp];
    __syncwarp();
    if (lane == 0) slot[warp] = rstd_of(t, N, eps);
    __syncwarp();
    normalize(x + (size_t)row * N, w, y + (size_t)row * N, N, lane, slot[warp]);
}

template <bool SYNC_END>
__device__ void rms_warp_atomic_rows(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                     int M, int N, float eps) {
    __shared__ float slot[WARPS];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int row = blockIdx.x * WARPS + warp; row < M; row += gridDim.x * WARPS) {
        if (lane == 0) slot[warp] = 0.f;
        __syncwarp();
        atomicAdd(&slot[warp], sumsq(x + (size_t)row * N, N, lane));
        __syncwarp();
        const float r = rstd_of(slot[warp], N, eps);
        normalize(x + (size_t)row * N, w, y + (size_t)row * N, N, lane, r);
        if (SYNC_END) __syncwarp();  // every lane has read the sum before lane 0 zeroes it for the next row
    }
}

}  // namespace

#define KV_RMS_WARP(name, call)                                                                                   \
    extern "C" __global__ void __launch_bounds__(32 * WARPS)                                                      \
        name(const float* x, const float* w, float* y, int M, int N, float eps) {                                 \
        call(x, w, y, M, N, eps);                                                                                 \
    }
KV_RMS_WARP(rms_warp_store_all_f32, rms_warp_store_all<false>)
KV_RMS_WARP(rms_warp_down_store_all_f32, rms_warp_store_all<true>)
KV_RMS_WARP(rms_warp_rows_loop_f32, rms_warp_rows_loop)
KV_RMS_WARP(rms_warp_lane0_f32, rms_warp_lane0<true>)
KV_RMS_WARP(rms_warp_lane0_no_syncwarp_f32, rms_warp_lane0<false>)
KV_RMS_WARP(rms_warp_atomic_rows_f32, rms_warp_atomic_rows<true>)
KV_RMS_WARP(rms_warp_atomic_rows_no_syncwarp_f32, rms_warp_atomic_rows<false>)
