// Output-memory defects for checking, on a GPU, that the one CUDA launch path (verifier/launch/cuda.py) on the
// harness's driver buffers detects them (tests/test_launch_path_gpu.py). RMSNorm, one 256-thread block per row,
// f32, written as kernels/defects/cuda/sync_defects.cu's correct block RMSNorm, plus one defect each:
//   rms_overrun_f32:   the last row's block also stores one element past the end of y (out-of-range-write)
//   rms_skip_last_f32: y[M-1][N-1] is never stored (unwritten)
//   rms_illegal_f32:   stores through address 16 (an illegal address: a crash)
#include "../../../kernels/cuda/common.cuh"

namespace {
__device__ void rms_rows(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int N,
                         float eps, bool skip_last) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    ss = kv::block_sum(ss, scratch);
    const float rstd = 1.0f / sqrtf(ss / (float)N + eps);
    const bool last_row = blockIdx.x == gridDim.x - 1;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        if (skip_last && last_row && i == N - 1) continue;
        yr[i] = xr[i] * rstd * w[i];
    }
}
}  // namespace

extern "C" __global__ void __launch_bounds__(256)
rms_overrun_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_rows(x, w, y, N, eps, false);
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) y[(size_t)M * N] = 0.f;
}

extern "C" __global__ void __launch_bounds__(256)
rms_skip_last_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_rows(x, w, y, N, eps, true);
}

extern "C" __global__ void __launch_bounds__(256)
rms_illegal_f32(const float* x, const float* w, float* y, int M, int N, float eps) {
    rms_rows(x, w, y, N, eps, false);
    if (threadIdx.x == 0) *reinterpret_cast<volatile float*>(16) = 1.f;
}
