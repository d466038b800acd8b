// A CUDA kernel that zeroes its input x after reading it (the input-clobbered check, tests/test_inputs_unchanged.py):
// RMSNorm, one 256-thread block per row, f32; each block zeroes its own row of x once every thread has read it.
#include "../../../kernels/cuda/common.cuh"

extern "C" __global__ void __launch_bounds__(256)
rms_zeroes_x_f32(float* x, const float* w, float* y, int M, int N, float eps) {
    __shared__ float scratch[32];
    float* xr = x + (size_t)blockIdx.x * N;
    float* yr = y + (size_t)blockIdx.x * N;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    ss = kv::block_sum(ss, scratch);
    const float rstd = 1.0f / sqrtf(ss / (float)N + eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x) yr[i] = xr[i] * rstd * w[i];
    __syncthreads();
    for (int i = threadIdx.x; i < N; i += blockDim.x) xr[i] = 0.f;
}
