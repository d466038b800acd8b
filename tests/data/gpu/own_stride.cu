// A twin pair for the strided case's per-tensor row strides (verifier.inputs.layouts.row_pad), checked on a GPU by
// tests/test_cuda_own_stride_gpu.py. RMSNorm, one 256-thread block per row, f32, rows at the int64 strides the
// launch passes (x's, y's):
//   rms_own_stride_f32:    reads x at x's stride, writes y at y's (correct)
//   rms_y_at_x_stride_f32: writes y at x's stride (a fresh output beside a sliced x: the wrong rows)
#include "../../../kernels/cuda/common.cuh"

namespace {
__device__ void rms_row(const float* __restrict__ xr, const float* __restrict__ w, float* __restrict__ yr, int N,
                        float eps) {
    __shared__ float scratch[32];
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    ss = kv::block_sum(ss, scratch);
    const float rstd = 1.0f / sqrtf(ss / (float)N + eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x) yr[i] = xr[i] * rstd * w[i];
}
}  // namespace

extern "C" __global__ void __launch_bounds__(256)
rms_own_stride_f32(const float* x, const float* w, float* y, int N, long long sx, long long sy, float eps) {
    rms_row(x + (long long)blockIdx.x * sx, w, y + (long long)blockIdx.x * sy, N, eps);
}

extern "C" __global__ void __launch_bounds__(256)
rms_y_at_x_stride_f32(const float* x, const float* w, float* y, int N, long long sx, long long sy, float eps) {
    rms_row(x + (long long)blockIdx.x * sx, w, y + (long long)blockIdx.x * sx, N, eps);
}
