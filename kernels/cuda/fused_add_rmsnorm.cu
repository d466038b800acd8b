// Fused residual add + RMSNorm (vLLM's fused_add_rms_norm), I/O f32 / f16 / bf16, fp32 math:
//   r = float(x) + float(residual);  residual = round(r) (in place);  y = r / sqrt(mean(r^2) + eps) * w
// The norm uses the fp32 sum r, not the rounded residual. One block per row, blockDim.x = FAR_THREADS. Rows of x,
// residual and y lie sx, sr and sy elements apart (the launch passes each row stride, int64; contiguous: N).
// Every element is read and written by the same thread, so the in-place update needs no barrier.
//   rr:   r kept in registers (x and residual read once); template on elements per thread.
//   loop: any N; pass 1 sums r^2 without writing, pass 2 recomputes r from the untouched inputs.
// Precise math: IEEE sqrtf and division.
#include "common.cuh"

#define FAR_THREADS 256

namespace {

__device__ __forceinline__ float rstd_of(float sumsq, int N, float eps) {
    // sumsq * (1/N): see rmsnorm.cu (keeps the division's slow-path call away from the live row).
    return 1.0f / sqrtf(sumsq * (1.0f / (float)N) + eps);
}

template <typename T, int E>
__device__ void far_rr(const T* __restrict__ x, T* __restrict__ residual, const T* __restrict__ w,
                       T* __restrict__ y, int N, float eps, long long sx, long long sr, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* rr = residual + (long long)blockIdx.x * sr;
    T* yr = y + (long long)blockIdx.x * sy;
    float r[E];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * FAR_THREADS;
        r[k] = 0.f;
        if (i < N) {
            r[k] = kv::to_float(xr[i]) + kv::to_float(rr[i]);
            rr[i] = kv::from_float<T>(r[k]);
        }
        ss = fmaf(r[k], r[k], ss);
    }
    const float rstd = rstd_of(kv::block_sum(ss, scratch), N, eps);
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * FAR_THREADS;
        if (i < N) yr[i] = kv::from_float<T>(r[k] * rstd * kv::to_float(w[i]));
    }
}

template <typename T>
__device__ void far_loop(const T* __restrict__ x, T* __restrict__ residual, const T* __restrict__ w,
                         T* __restrict__ y, int N, float eps, long long sx, long long sr, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* rr = residual + (long long)blockIdx.x * sr;
    T* yr = y + (long long)blockIdx.x * sy;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        const float r = kv::to_float(xr[i]) + kv::to_float(rr[i]);
        ss = fmaf(r, r, ss);
    }
    const float rstd = rstd_of(kv::block_sum(ss, scratch), N, eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        const float r = kv::to_float(xr[i]) + kv::to_float(rr[i]);
        rr[i] = kv::from_float<T>(r);
        yr[i] = kv::from_float<T>(r * rstd * kv::to_float(w[i]));
    }
}

}  // namespace

#define FAR_RR(T, tag, E)                                                                                   \
    extern "C" __global__ void __launch_bounds__(FAR_THREADS) fused_add_rmsnorm_rr_##tag##_e##E(            \
        const T* x, T* residual, const T* w, T* y, int M, int N, float eps, long long sx, long long sr,      \
        long long sy) {                                                                                     \
        far_rr<T, E>(x, residual, w, y, N, eps, sx, sr, sy);                                                \
    }

// Size classes (elements per thread); the spec's table must match these instantiations.
#define FAR_ALL(T, tag)                                                                                     \
    FAR_RR(T, tag, 1) FAR_RR(T, tag, 4) FAR_RR(T, tag, 8) FAR_RR(T, tag, 16) FAR_RR(T, tag, 32)             \
    extern "C" __global__ void __launch_bounds__(FAR_THREADS) fused_add_rmsnorm_loop_##tag(                 \
        const T* x, T* residual, const T* w, T* y, int M, int N, float eps, long long sx, long long sr,      \
        long long sy) {                                                                                     \
        far_loop<T>(x, residual, w, y, N, eps, sx, sr, sy);                                                 \
    }

FAR_ALL(float, f32)
FAR_ALL(__half, f16)
FAR_ALL(__nv_bfloat16, bf16)
