// Quantizing reductions, one block of QT_THREADS per row, the row in registers (E elements per thread, coalesced:
// element k of a thread is column threadIdx.x + k * QT_THREADS), x read once:
//   per_token_quant: amax = max|x|, scale = max(amax, floor) / qmax (written, fp32), y = saturate(round(x / scale))
//   rmsnorm_quant:   y = saturate(round(x * rstd * w * (1 / scale[0]))), rstd = 1 / sqrtf(sum(x^2) / N + eps)
//   rmsnorm_dynamic_quant: n = x * rstd * w, scale = max(amax|n|, floor) / qmax (written), y = saturate(round(n / scale))
//   fused_add_rmsnorm_quant: h = x + residual (fp32; stored rounded into residual), y as rmsnorm_quant of h
// Outputs: fp8 e4m3 / e5m2 through the satfinite round-to-nearest-even conversion (saturates at the format's own
// max, keeps NaN); int8 clamped to +-127 then __float2int_rn (nearest-even). Precise math: IEEE division and sqrt.
// A NaN anywhere in a per_token_quant row makes its scale NaN (as torch's amax): fmaxf alone would drop it.
// The *_v kernels load x and w as 16-byte vectors (VEC = 16 / sizeof(T) elements; the spec refuses N % VEC != 0 and
// declares 16-byte aligned tensors) and store VEC outputs at once (8 bytes of fp8 / int8 for 16-bit inputs).
#include <cuda_fp8.h>
#include "common.cuh"

#define QT_THREADS 256

namespace {

struct E4M3 {
    using Store = __nv_fp8_storage_t;
    static constexpr float kMax = 448.f;
    static __device__ __forceinline__ Store cvt(float v) { return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3); }
};
struct E5M2 {
    using Store = __nv_fp8_storage_t;
    static constexpr float kMax = 57344.f;
    static __device__ __forceinline__ Store cvt(float v) { return __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2); }
};
struct I8 {
    using Store = signed char;
    static constexpr float kMax = 127.f;
    static __device__ __forceinline__ Store cvt(float v) {
        return (Store)__float2int_rn(fminf(fmaxf(v, -kMax), kMax));  // NaN: not representable (its scale says NaN)
    }
};

template <typename T, typename Q, int E>
__device__ void per_token(const T* __restrict__ x, typename Q::Store* __restrict__ y, float* __restrict__ scale, int N,
                          float floor_, long long sx, long long sy) {
    __shared__ float scratch[32];
    __shared__ float scratch_nan[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    typename Q::Store* yr = y + (long long)blockIdx.x * sy;
    float v[E];
    float m = 0.f, nan = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        v[k] = i < N ? kv::to_float(xr[i]) : 0.f;
        m = fmaxf(m, fabsf(v[k]));
        nan = v[k] != v[k] ? 1.f : nan;
    }
    m = kv::block_max(m, scratch);
    nan = kv::block_max(nan, scratch_nan);
    const float s = nan > 0.f ? __int_as_float(0x7fffffff) : fmaxf(m, floor_) / Q::kMax;
    if (threadIdx.x == 0) scale[blockIdx.x] = s;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        if (i < N) yr[i] = Q::cvt(v[k] / s);
    }
}

template <typename T, typename Q, int E>
__device__ void rms_quant(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ scale,
                          typename Q::Store* __restrict__ y, int N, float eps, long long sx, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    typename Q::Store* yr = y + (long long)blockIdx.x * sy;
    float v[E];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        v[k] = i < N ? kv::to_float(xr[i]) : 0.f;
        ss = fmaf(v[k], v[k], ss);
    }
    const float r = 1.0f / sqrtf(kv::block_sum(ss, scratch) / (float)N + eps);
    const float inv = 1.0f / scale[0];
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        if (i < N) yr[i] = Q::cvt(v[k] * r * kv::to_float(w[i]) * inv);
    }
}

template <typename T, typename Q, int E>
__device__ void rms_dynamic(const T* __restrict__ x, const T* __restrict__ w, typename Q::Store* __restrict__ y,
                            float* __restrict__ scale, int N, float eps, float floor_, long long sx, long long sy) {
    __shared__ float scratch[32];
    __shared__ float scratch_max[32];
    __shared__ float scratch_nan[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    typename Q::Store* yr = y + (long long)blockIdx.x * sy;
    float v[E];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        v[k] = i < N ? kv::to_float(xr[i]) : 0.f;
        ss = fmaf(v[k], v[k], ss);
    }
    const float r = 1.0f / sqrtf(kv::block_sum(ss, scratch) / (float)N + eps);
    float m = 0.f, nan = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        v[k] = i < N ? v[k] * r * kv::to_float(w[i]) : 0.f;
        m = fmaxf(m, fabsf(v[k]));
        nan = v[k] != v[k] ? 1.f : nan;
    }
    m = kv::block_max(m, scratch_max);
    nan = kv::block_max(nan, scratch_nan);
    const float s = nan > 0.f ? __int_as_float(0x7fffffff) : fmaxf(m, floor_) / Q::kMax;
    if (threadIdx.x == 0) scale[blockIdx.x] = s;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        if (i < N) yr[i] = Q::cvt(v[k] / s);
    }
}

template <typename T, typename Q, int E>
__device__ void add_rms_quant(const T* __restrict__ x, T* __restrict__ residual, const T* __restrict__ w,
                              const float* __restrict__ scale, typename Q::Store* __restrict__ y, int N, float eps,
                              long long sx, long long sr, long long sy) {
    __shared__ float scratch[32];
    const T* xr = x + (long long)blockIdx.x * sx;
    T* rr = residual + (long long)blockIdx.x * sr;
    typename Q::Store* yr = y + (long long)blockIdx.x * sy;
    float v[E];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        v[k] = i < N ? kv::to_float(xr[i]) + kv::to_float(rr[i]) : 0.f;
        if (i < N) rr[i] = kv::from_float<T>(v[k]);  // each thread rewrites only the columns it read
        ss = fmaf(v[k], v[k], ss);
    }
    const float r = 1.0f / sqrtf(kv::block_sum(ss, scratch) / (float)N + eps);
    const float inv = 1.0f / scale[0];
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const int i = threadIdx.x + k * QT_THREADS;
        if (i < N) yr[i] = Q::cvt(v[k] * r * kv::to_float(w[i]) * inv);
    }
}

// VEC quantized outputs, stored as one VEC-byte access.
template <typename Q, int VEC>
struct alignas(VEC) OutPack {
    typename Q::Store s[VEC];
};

// Chunk k of this thread is threadIdx.x + k * QT_THREADS (VEC consecutive columns); E = C * VEC elements.
template <typename T, typename Q, int E>
__device__ void per_token_v(const T* __restrict__ x, typename Q::Store* __restrict__ y, float* __restrict__ scale,
                            int N, float floor_, long long sx, long long sy) {
    using V = kv::Vec16<T>;
    constexpr int VEC = V::W, C = E / VEC;
    static_assert(C >= 1 && C * VEC == E, "E must be a multiple of the vector width");
    __shared__ float scratch[32];
    __shared__ float scratch_nan[32];
    const int nchunks = N / VEC;
    const uint4* xr = reinterpret_cast<const uint4*>(x + (long long)blockIdx.x * sx);
    OutPack<Q, VEC>* yr = reinterpret_cast<OutPack<Q, VEC>*>(y + (long long)blockIdx.x * sy);
    float v[E];
    float m = 0.f, nan = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = threadIdx.x + k * QT_THREADS;
        typename V::U p;
        p.raw = c < nchunks ? xr[c] : make_uint4(0u, 0u, 0u, 0u);  // all-zero bits are 0.0 in every T
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            v[k * VEC + j] = kv::to_float(p.e[j]);
            m = fmaxf(m, fabsf(v[k * VEC + j]));
            nan = v[k * VEC + j] != v[k * VEC + j] ? 1.f : nan;
        }
    }
    m = kv::block_max(m, scratch);
    nan = kv::block_max(nan, scratch_nan);
    const float s = nan > 0.f ? __int_as_float(0x7fffffff) : fmaxf(m, floor_) / Q::kMax;
    if (threadIdx.x == 0) scale[blockIdx.x] = s;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = threadIdx.x + k * QT_THREADS;
        if (c < nchunks) {
            OutPack<Q, VEC> o;
#pragma unroll
            for (int j = 0; j < VEC; ++j) o.s[j] = Q::cvt(v[k * VEC + j] / s);
            yr[c] = o;
        }
    }
}

template <typename T, typename Q, int E>
__device__ void rms_quant_v(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ scale,
                            typename Q::Store* __restrict__ y, int N, float eps, long long sx, long long sy) {
    using V = kv::Vec16<T>;
    constexpr int VEC = V::W, C = E / VEC;
    static_assert(C >= 1 && C * VEC == E, "E must be a multiple of the vector width");
    __shared__ float scratch[32];
    const int nchunks = N / VEC;
    const uint4* xr = reinterpret_cast<const uint4*>(x + (long long)blockIdx.x * sx);
    const uint4* wv = reinterpret_cast<const uint4*>(w);
    OutPack<Q, VEC>* yr = reinterpret_cast<OutPack<Q, VEC>*>(y + (long long)blockIdx.x * sy);
    float v[E];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = threadIdx.x + k * QT_THREADS;
        typename V::U p;
        p.raw = c < nchunks ? xr[c] : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            v[k * VEC + j] = kv::to_float(p.e[j]);
            ss = fmaf(v[k * VEC + j], v[k * VEC + j], ss);
        }
    }
    const float r = 1.0f / sqrtf(kv::block_sum(ss, scratch) / (float)N + eps);
    const float inv = 1.0f / scale[0];
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int c = threadIdx.x + k * QT_THREADS;
        if (c < nchunks) {
            typename V::U pw;
            pw.raw = wv[c];
            OutPack<Q, VEC> o;
#pragma unroll
            for (int j = 0; j < VEC; ++j) o.s[j] = Q::cvt(v[k * VEC + j] * r * kv::to_float(pw.e[j]) * inv);
            yr[c] = o;
        }
    }
}

}  // namespace

#define QT_ONE(T, tag, Q, E)                                                                                   \
    extern "C" __global__ void __launch_bounds__(QT_THREADS)                                                        \
        per_token_quant_##tag##_e##E(const T* x, Q::Store* y, float* scale, int M, int N, float floor_,       \
                                              long long sx, long long sy) {                                         \
        per_token<T, Q, E>(x, y, scale, N, floor_, sx, sy);                                                         \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(QT_THREADS)                                                        \
        rmsnorm_quant_##tag##_e##E(const T* x, const T* w, const float* scale, Q::Store* y, int M, int N,     \
                                            float eps, long long sx, long long sy) {                                \
        rms_quant<T, Q, E>(x, w, scale, y, N, eps, sx, sy);                                                         \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(QT_THREADS)                                                        \
        rmsnorm_dynamic_quant_##tag##_e##E(const T* x, const T* w, Q::Store* y, float* scale, int M, int N,        \
                                           float eps, float floor_, long long sx, long long sy) {                  \
        rms_dynamic<T, Q, E>(x, w, y, scale, N, eps, floor_, sx, sy);                                               \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(QT_THREADS)                                                        \
        fused_add_rmsnorm_quant_##tag##_e##E(const T* x, T* residual, const T* w, const float* scale, Q::Store* y, \
                                             int M, int N, float eps, long long sx, long long sr, long long sy) {  \
        add_rms_quant<T, Q, E>(x, residual, w, scale, y, N, eps, sx, sr, sy);                                       \
    }

// Size classes (elements per thread): the spec's table must match (quant_spec.py SIZES).
#define QT_V(T, tag, Q, E)                                                                                         \
    extern "C" __global__ void __launch_bounds__(QT_THREADS)                                                        \
        per_token_quant_v_##tag##_e##E(const T* x, Q::Store* y, float* scale, int M, int N, float floor_,         \
                                       long long sx, long long sy) {                                                \
        per_token_v<T, Q, E>(x, y, scale, N, floor_, sx, sy);                                                       \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(QT_THREADS)                                                        \
        rmsnorm_quant_v_##tag##_e##E(const T* x, const T* w, const float* scale, Q::Store* y, int M, int N,       \
                                     float eps, long long sx, long long sy) {                                       \
        rms_quant_v<T, Q, E>(x, w, scale, y, N, eps, sx, sy);                                                       \
    }
// Vector size classes (quant_spec.py VSIZES): 16-bit inputs 8, 16, 32 per thread; float32 4 .. 32.
#define QT_V16(T, tag, Q) QT_V(T, tag, Q, 8) QT_V(T, tag, Q, 16) QT_V(T, tag, Q, 32)

// Entries are named by the variant's tag (Dtypes.tag: bf16toe4m3 is bf16 in, e4m3 out).
#define QT_SIZES(T, tag, Q) \
    QT_ONE(T, tag, Q, 1) QT_ONE(T, tag, Q, 4) QT_ONE(T, tag, Q, 8) QT_ONE(T, tag, Q, 16) QT_ONE(T, tag, Q, 32)

QT_SIZES(__nv_bfloat16, bf16toe4m3, E4M3)
QT_SIZES(__half, f16toe4m3, E4M3)
QT_SIZES(__nv_bfloat16, bf16toe5m2, E5M2)
QT_SIZES(__nv_bfloat16, bf16toi8, I8)
QT_SIZES(float, f32toi8, I8)
QT_V16(__nv_bfloat16, bf16toe4m3, E4M3)
QT_V16(__half, f16toe4m3, E4M3)
QT_V16(__nv_bfloat16, bf16toe5m2, E5M2)
QT_V16(__nv_bfloat16, bf16toi8, I8)
QT_V16(float, f32toi8, I8)
QT_V(float, f32toi8, I8, 4)
