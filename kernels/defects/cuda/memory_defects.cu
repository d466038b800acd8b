// Memory defects (f32 I/O, fp32 math), each next to its correct form.
//   rms_w4_f32: RMSNorm, one 256-thread block per row, x read as scalars, the weight row w read as
//     16-byte float4 vectors (w is one aligned allocation, reused by every row). It reads
//     ceil(N / 4) vectors: for N % 4 != 0 the last float4 reads up to 12 bytes past the end of w.
//     The lanes past N are masked out of the math, so the values stay right; only memcheck sees
//     it. The defect is in supports() accepting N % 4 != 0 (the twin refuses it).
//   reduce_split_zero_f32 + reduce_split_atomic_f32: row sum with the row split over SPLIT blocks
//     that atomicAdd their fp32 partial sums into y[row] (after a zeroing launch). The order of
//     the atomics changes from run to run, and with it the rounding: not bitwise deterministic.
//     Twin: kernels/cuda/allreduce.cu (one block per row, fixed order).
#include "../../cuda/common.cuh"

#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
    rms_w4_f32(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int M, int N,
               float eps) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;
    const int nvec = (N + 3) / 4;  // rounds up: the last vector may run past w's end
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += THREADS) ss = fmaf(xr[i], xr[i], ss);
    const float rstd = 1.0f / sqrtf(kv::block_sum(ss, scratch) / (float)N + eps);
    for (int j = threadIdx.x; j < nvec; j += THREADS) {
        const float4 wv = reinterpret_cast<const float4*>(w)[j];
        const float wk[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int i = 4 * j + k;
            if (i < N) yr[i] = xr[i] * rstd * wk[k];
        }
    }
}

extern "C" __global__ void reduce_split_zero_f32(float* __restrict__ y, int M) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M) y[r] = 0.f;
}

// grid (M, SPLIT): block (row, part) sums columns part*chunk .. (part+1)*chunk - 1.
extern "C" __global__ void __launch_bounds__(THREADS)
    reduce_split_atomic_f32(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
    __shared__ float scratch[32];
    const int chunk = (N + gridDim.y - 1) / gridDim.y;
    const int lo = blockIdx.y * chunk, hi = min(N, lo + chunk);
    const float* xr = x + (size_t)blockIdx.x * N;
    float s = 0.f;
    for (int i = lo + threadIdx.x; i < hi; i += THREADS) s += xr[i];
    s = kv::block_sum(s, scratch);
    if (threadIdx.x == 0) atomicAdd(y + blockIdx.x, s);  // arrival order varies run to run
}
