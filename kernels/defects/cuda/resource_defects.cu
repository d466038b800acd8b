// Resource defect: softmax with the row in a per-thread register array (as softmax.cu S3), but the
// array is indexed by a loop whose trip count depends on N at run time. The compiler cannot unroll
// it, so v[] is dynamically indexed and lives in local memory (a stack frame, ptxas -v shows it),
// although the kernel is declared register-resident. Twin: cuda-softmax-s3 (kernels/cuda/softmax.cu,
// ELEMS a template constant, every loop fully unrolled).
#include "../../cuda/softmax_common.cuh"

#define THREADS 256
#define MAX_ELEMS 32  // N <= 8192

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_regs_dynamic_f32(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;
    const int elems = (N + THREADS - 1) / THREADS;  // run-time bound: no full unroll
    float v[MAX_ELEMS];
    float m = -INFINITY;
    for (int c = 0; c < elems; ++c) {
        const int i = threadIdx.x + c * THREADS;
        v[c] = (i < N) ? xr[i] : -INFINITY;
        m = kv::nanmax(m, v[c]);
    }
    m = kv::block_nanmax(m, scratch);
    float s = 0.f;
    for (int c = 0; c < elems; ++c) {
        const int i = threadIdx.x + c * THREADS;
        v[c] = (i < N) ? expf(v[c] - m) : 0.f;
        s += v[c];
    }
    s = kv::block_sum(s, scratch);
    for (int c = 0; c < elems; ++c) {
        const int i = threadIdx.x + c * THREADS;
        if (i < N) yr[i] = v[c] / s;
    }
}

// Resource defect: RMSNorm keeping its row in registers (32 floats per thread, every loop unrolled),
// but __launch_bounds__(256, 8) caps it at 32 registers per thread, so ptxas spills the row to local
// memory (spill stores and loads in ptxas -v). The values stay right; the cost is hidden unless the
// spec says what it expects: with default Expectations the spill is a resources warning, declared
// register_resident() it is an error. Twin: cuda-rmsnorm-block (kernels/defects/cuda/sync_defects.cu).
#define SPILL_ELEMS 32  // N <= 8192

extern "C" __global__ void __launch_bounds__(THREADS, 8)
    rmsnorm_regs_spill_f32(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                           int M, int N, float eps) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;
    float v[SPILL_ELEMS];
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < SPILL_ELEMS; ++c) {
        const int i = threadIdx.x + c * THREADS;
        v[c] = (i < N) ? xr[i] : 0.f;
        ss = fmaf(v[c], v[c], ss);
    }
    ss = kv::block_sum(ss, scratch);
    const float r = 1.0f / sqrtf(ss / (float)N + eps);
#pragma unroll
    for (int c = 0; c < SPILL_ELEMS; ++c) {
        const int i = threadIdx.x + c * THREADS;
        if (i < N) yr[i] = v[c] * r * w[i];
    }
}
