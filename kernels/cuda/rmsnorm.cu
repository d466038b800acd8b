// RMSNorm ladder: y = x / sqrt(mean(x^2) + eps) * w, fp32 math, I/O f32 / f16 / bf16.
//   n1: two kernels (rstd pass writes rstd[M], normalize pass reads it back)
//   n2: one kernel, reads x twice (sum of squares, then normalize)
//   n3: one kernel, row kept in registers (x read once); template on elements per thread
//   n4: n3 with 16-byte vector loads/stores; the spec refuses N % VEC != 0
// Precise math: rstd = 1.0f / sqrtf(...) (IEEE sqrt and division; no rsqrtf).
// One block per row; blockDim.x must be RMS_THREADS (the spec launches exactly that). Rows of x and y lie sx and
// sy elements apart (the launch passes each tensor's row stride, int64; contiguous rows: N).
#include "common.cuh"

#define RMS_THREADS 256

namespace {

__device__ __forceinline__ float rstd_of(float sumsq, int N, float eps) {
    // An all-zero row gives 1/sqrt(eps): finite, so y = 0 * rstd * w = 0.
    // sumsq * (1/N) rather than sumsq / N: one extra rounding (<= 1 u32), but the division's
    // slow-path call no longer sits where the row is live, which made ptxas spill (n3 f16 e16).
    return 1.0f / sqrtf(sumsq * (1.0f / (float)N) + eps);
}

template <typename T>
__device__ void n1_rstd(const T* __restrict__ x, float* __restrict__ rstd, int N, float eps, long long sx) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        const float v = kv::to_float(xr[i]);
        ss = fmaf(v, v, ss);
    }
    ss = kv::block_sum(ss, scratch);
    if (threadIdx.x == 0) rstd[blockIdx.x] = rstd_of(ss, N, eps);
}

template <typename T>
__device__ void n1_norm(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ rstd,
                        T* __restrict__ y, int N, long long sx, long long sy) {
    const T* xr = x + (long long)blockIdx.x * sx;
    T* yr = y + (long long)blockIdx.x * sy;
    const float r = rstd[blockIdx.x];
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        yr[i] = kv::from_float<T>(kv::to_float(xr[i]) * r * kv::to_float(w[i]));
}

template <typename T>
__device__ void n2(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, float eps,
                   long long sx, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* yr = y + (long long)blockIdx.x * sy;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        const float v = kv::to_float(xr[i]);
        ss = fmaf(v, v, ss);
    }
    const float r = rstd_of(kv::block_sum(ss, scratch), N, eps);
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        yr[i] = kv::from_float<T>(kv::to_float(xr[i]) * r * kv::to_float(w[i]));
}

// Element k of this thread is column threadIdx.x + k * RMS_THREADS (coalesced); E * RMS_THREADS >= N.
template <typename T, int E>
__device__ void n3(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, float eps,
                   long long sx, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* yr = y + (long long)blockIdx.x * sy;
    float v[E];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * RMS_THREADS;
        v[k] = i < N ? kv::to_float(xr[i]) : 0.f;
        ss = fmaf(v[k], v[k], ss);
    }
    const float r = rstd_of(kv::block_sum(ss, scratch), N, eps);
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * RMS_THREADS;
        if (i < N) yr[i] = kv::from_float<T>(v[k] * r * kv::to_float(w[i]));
    }
}

// 16 bytes of T reinterpreted: loaded and stored as one uint4.
template <typename T>
union Pack16 {
    static constexpr int kVec = 16 / sizeof(T);
    uint4 u;
    T t[kVec];
};

// Chunk c of VEC consecutive columns; chunk k of this thread is threadIdx.x + k * RMS_THREADS.
// N % VEC == 0 (spec) so a chunk is either wholly inside the row or wholly outside; every row start is 16-byte
// aligned (the spec declares Contracts(alignment=16): pointers and row strides keep 16 bytes).
template <typename T, int E>
__device__ void n4(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, float eps,
                   long long sx, long long sy) {
    constexpr int VEC = Pack16<T>::kVec;
    constexpr int C = E / VEC;  // chunks per thread
    static_assert(C >= 1 && C * VEC == E, "E must be a multiple of the vector width");
    __shared__ float scratch[32];
    const int nchunks = N / VEC;
    const uint4* xr = reinterpret_cast<const uint4*>(x + (long long)blockIdx.x * sx);
    const uint4* wv = reinterpret_cast<const uint4*>(w);
    uint4* yr = reinterpret_cast<uint4*>(y + (long long)blockIdx.x * sy);
    float v[E];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = threadIdx.x + k * RMS_THREADS;
        Pack16<T> p;
        p.u = c < nchunks ? xr[c] : make_uint4(0u, 0u, 0u, 0u);  // all-zero bits are 0.0 in every T
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            v[k * VEC + j] = kv::to_float(p.t[j]);
            ss = fmaf(v[k * VEC + j], v[k * VEC + j], ss);
        }
    }
    const float r = rstd_of(kv::block_sum(ss, scratch), N, eps);
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = threadIdx.x + k * RMS_THREADS;
        if (c < nchunks) {
            Pack16<T> pw, py;
            pw.u = wv[c];
#pragma unroll
            for (int j = 0; j < VEC; ++j) py.t[j] = kv::from_float<T>(v[k * VEC + j] * r * kv::to_float(pw.t[j]));
            yr[c] = py.u;
        }
    }
}

}  // namespace

#define RMS_SIMPLE(T, tag)                                                                                       \
    extern "C" __global__ void __launch_bounds__(RMS_THREADS)                                                    \
        rmsnorm_n1_rstd_##tag(const T* x, float* rstd, int M, int N, float eps, long long sx) {                  \
        n1_rstd<T>(x, rstd, N, eps, sx);                                                                         \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(RMS_THREADS)                                                    \
        rmsnorm_n1_norm_##tag(const T* x, const T* w, const float* rstd, T* y, int M, int N, long long sx,       \
                              long long sy) {                                                                    \
        n1_norm<T>(x, w, rstd, y, N, sx, sy);                                                                    \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(RMS_THREADS)                                                    \
        rmsnorm_n2_##tag(const T* x, const T* w, T* y, int M, int N, float eps, long long sx, long long sy) {    \
        n2<T>(x, w, y, N, eps, sx, sy);                                                                          \
    }

#define RMS_N3(T, tag, E)                                                  \
    extern "C" __global__ void __launch_bounds__(RMS_THREADS)              \
        rmsnorm_n3_##tag##_e##E(const T* x, const T* w, T* y, int M, int N, float eps, long long sx, long long sy) { \
        n3<T, E>(x, w, y, N, eps, sx, sy);                                 \
    }
#define RMS_N4(T, tag, E)                                                  \
    extern "C" __global__ void __launch_bounds__(RMS_THREADS)              \
        rmsnorm_n4_##tag##_e##E(const T* x, const T* w, T* y, int M, int N, float eps, long long sx, long long sy) { \
        n4<T, E>(x, w, y, N, eps, sx, sy);                                 \
    }

// Size classes (elements per thread); the spec's tables must match these instantiations.
#define RMS_ALL(T, tag)                                                           \
    RMS_SIMPLE(T, tag)                                                            \
    RMS_N3(T, tag, 1) RMS_N3(T, tag, 4) RMS_N3(T, tag, 8) RMS_N3(T, tag, 16) RMS_N3(T, tag, 32) \
    RMS_N4(T, tag, 8) RMS_N4(T, tag, 16) RMS_N4(T, tag, 32)

RMS_ALL(float, f32)
RMS_ALL(__half, f16)
RMS_ALL(__nv_bfloat16, bf16)
RMS_N4(float, f32, 4)  // f32 packs 4 per 16 bytes: one more, smaller class
