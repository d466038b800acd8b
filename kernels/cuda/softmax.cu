// Softmax ladder, one block per row, fp32 math, I/O f32 / f16 / bf16 (see softmax_spec.py).
//   S1: three kernels (row max, row sum of exp(x - max), normalize): reads x three times.
//   S2: one online (m, s) pass + the same normalize kernel: reads x twice.
//   S3: one pass, row held in registers (ELEMS per thread, compile-time size class).
//   S4: S3 with 16-byte vector loads/stores (f32: 4 elements, f16/bf16: 8); needs N % W == 0.
// Row semantics as torch.softmax (softmax_common.cuh): NaN or +inf in a row -> NaN row,
// fully -inf row -> NaN row, -inf element -> exactly 0. Rows of x and y lie sx and sy elements apart (the launch
// passes each tensor's row stride, int64; contiguous rows: N).
#include "softmax_common.cuh"

namespace {

constexpr int kThreads = 256;  // S1, S2, S3 block size; the spec launches with this

template <typename T>
__device__ __forceinline__ const T* row_ptr(const T* p, long long stride) {
    return p + (long long)blockIdx.x * stride;
}
template <typename T>
__device__ __forceinline__ T* row_ptr(T* p, long long stride) {
    return p + (long long)blockIdx.x * stride;
}

// ---- S1 --------------------------------------------------------------------------------
template <typename T>
__device__ void s1_max(const T* __restrict__ x, float* __restrict__ mx, int M, int N, long long sx) {
    __shared__ float scratch[32];
    const T* xr = row_ptr(x, sx);
    float m = -INFINITY;
    for (int i = threadIdx.x; i < N; i += blockDim.x) m = kv::nanmax(m, kv::to_float(xr[i]));
    m = kv::block_nanmax(m, scratch);
    if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

template <typename T>
__device__ void s1_sum(const T* __restrict__ x, const float* __restrict__ mx, float* __restrict__ sm, int M,
                       int N, long long sx) {
    __shared__ float scratch[32];
    const T* xr = row_ptr(x, sx);
    const float m = mx[blockIdx.x];
    float s = 0.f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) s += expf(kv::to_float(xr[i]) - m);
    s = kv::block_sum(s, scratch);
    if (threadIdx.x == 0) sm[blockIdx.x] = s;
}

// Normalize pass shared by S1 and S2: y = exp(x - m) / s.
template <typename T>
__device__ void norm(const T* __restrict__ x, const float* __restrict__ mx, const float* __restrict__ sm,
                     T* __restrict__ y, int M, int N, long long sx, long long sy) {
    const T* xr = row_ptr(x, sx);
    T* yr = row_ptr(y, sy);
    const float m = mx[blockIdx.x], s = sm[blockIdx.x];
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        yr[i] = kv::from_float<T>(kv::softmax_out(kv::to_float(xr[i]), m, s));
}

// ---- S2: online (m, s) in one read ------------------------------------------------------
template <typename T>
__device__ void s2_ms(const T* __restrict__ x, float* __restrict__ mx, float* __restrict__ sm, int M, int N,
                      long long sx) {
    __shared__ float scratch_m[32], scratch_s[32];
    const T* xr = row_ptr(x, sx);
    kv::MS a = kv::ms_empty();
    for (int i = threadIdx.x; i < N; i += blockDim.x) kv::ms_push(a, kv::to_float(xr[i]));
    a = kv::block_ms(a, scratch_m, scratch_s);
    if (threadIdx.x == 0) {
        mx[blockIdx.x] = a.m;
        sm[blockIdx.x] = a.s;
    }
}

// ---- S3: row in registers, exact max first (no rescaling), each exp computed once -------
// Thread t holds columns t, t + THREADS, ... (coalesced). Columns >= N are never read or written.
template <typename T, int THREADS, int ELEMS>
__device__ void s3(const T* __restrict__ x, T* __restrict__ y, int M, int N, long long sx, long long sy) {
    if (blockDim.x != THREADS) __trap();  // a wrong launch would skip columns silently
    __shared__ float scratch[32];
    const T* xr = row_ptr(x, sx);
    T* yr = row_ptr(y, sy);
    float v[ELEMS];
    float m = -INFINITY;
#pragma unroll
    for (int c = 0; c < ELEMS; ++c) {
        const int i = threadIdx.x + c * THREADS;
        v[c] = (i < N) ? kv::to_float(xr[i]) : -INFINITY;
        m = kv::nanmax(m, v[c]);
    }
    m = kv::block_nanmax(m, scratch);
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < ELEMS; ++c) {
        const int i = threadIdx.x + c * THREADS;
        v[c] = (i < N) ? expf(v[c] - m) : 0.f;
        s += v[c];
    }
    s = kv::block_sum(s, scratch);
#pragma unroll
    for (int c = 0; c < ELEMS; ++c) {
        const int i = threadIdx.x + c * THREADS;
        if (i < N) yr[i] = kv::from_float<T>(v[c] / s);
    }
}

// ---- S4: S3 with 16-byte vectors. Thread t holds vectors t, t + THREADS, ... -------------
template <typename T, int THREADS, int VECS>
__device__ void s4(const T* __restrict__ x, T* __restrict__ y, int M, int N, long long sx, long long sy) {
    constexpr int W = kv::Vec16<T>::W;
    if (blockDim.x != THREADS) __trap();  // a wrong launch would skip columns silently
    __shared__ float scratch[32];
    const T* xr = row_ptr(x, sx);  // 16-byte aligned rows: declared by the spec (Contracts(alignment=16))
    T* yr = row_ptr(y, sy);
    const int nvec = N / W;  // the spec refuses N % W != 0
    float v[VECS][W];
    float m = -INFINITY;
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const int j = threadIdx.x + c * THREADS;
        if (j < nvec) {
            kv::load16(xr + (size_t)j * W, v[c]);
        } else {
#pragma unroll
            for (int k = 0; k < W; ++k) v[c][k] = -INFINITY;
        }
#pragma unroll
        for (int k = 0; k < W; ++k) m = kv::nanmax(m, v[c][k]);
    }
    m = kv::block_nanmax(m, scratch);
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const bool in = threadIdx.x + c * THREADS < nvec;
#pragma unroll
        for (int k = 0; k < W; ++k) {
            v[c][k] = in ? expf(v[c][k] - m) : 0.f;
            s += v[c][k];
        }
    }
    s = kv::block_sum(s, scratch);
#pragma unroll
    for (int c = 0; c < VECS; ++c) {
        const int j = threadIdx.x + c * THREADS;
        if (j < nvec) {
#pragma unroll
            for (int k = 0; k < W; ++k) v[c][k] = v[c][k] / s;
            kv::store16(yr + (size_t)j * W, v[c]);
        }
    }
}

}  // namespace

// ---- extern "C" entries: <kernel>_<io> --------------------------------------------------
#define KV_SOFTMAX_MULTIPASS(TAG, T)                                                                      \
    extern "C" __global__ void __launch_bounds__(kThreads)                                               \
        softmax_s1_max_##TAG(const T* x, float* mx, int M, int N, long long sx) {                        \
        s1_max<T>(x, mx, M, N, sx);                                                                      \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(kThreads)                                               \
        softmax_s1_sum_##TAG(const T* x, const float* mx, float* sm, int M, int N, long long sx) {       \
        s1_sum<T>(x, mx, sm, M, N, sx);                                                                  \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(kThreads)                                               \
        softmax_norm_##TAG(const T* x, const float* mx, const float* sm, T* y, int M, int N, long long sx, \
                           long long sy) {                                                               \
        norm<T>(x, mx, sm, y, M, N, sx, sy);                                                             \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(kThreads)                                               \
        softmax_s2_ms_##TAG(const T* x, float* mx, float* sm, int M, int N, long long sx) {              \
        s2_ms<T>(x, mx, sm, M, N, sx);                                                                   \
    }

// S3 size classes (N <= CLASS): ELEMS = CLASS / 256. Keep in sync with softmax_spec.S3_CLASSES.
#define KV_SOFTMAX_S3(TAG, T, CLASS)                                                                      \
    extern "C" __global__ void __launch_bounds__(kThreads)                                               \
        softmax_s3_n##CLASS##_##TAG(const T* x, T* y, int M, int N, long long sx, long long sy) {        \
        s3<T, kThreads, CLASS / kThreads>(x, y, M, N, sx, sy);                                           \
    }
// S4 size classes: THREADS * VECS * W = CLASS. Keep in sync with softmax_spec.S4_CLASSES.
#define KV_SOFTMAX_S4(TAG, T, CLASS, THREADS)                                                             \
    extern "C" __global__ void __launch_bounds__(THREADS) softmax_s4_n##CLASS##_##TAG(                    \
        const T* x, T* y, int M, int N, long long sx, long long sy) {                                    \
        s4<T, THREADS, CLASS / (THREADS * kv::Vec16<T>::W)>(x, y, M, N, sx, sy);                         \
    }

#define KV_SOFTMAX_ALL(TAG, T, T4)                                                                        \
    KV_SOFTMAX_MULTIPASS(TAG, T)                                                                         \
    KV_SOFTMAX_S3(TAG, T, 1024)                                                                          \
    KV_SOFTMAX_S3(TAG, T, 2048)                                                                          \
    KV_SOFTMAX_S3(TAG, T, 4096)                                                                          \
    KV_SOFTMAX_S3(TAG, T, 8192)                                                                          \
    KV_SOFTMAX_S4(TAG, T, 1024, T4)                                                                      \
    KV_SOFTMAX_S4(TAG, T, 2048, 256)                                                                     \
    KV_SOFTMAX_S4(TAG, T, 4096, 256)                                                                     \
    KV_SOFTMAX_S4(TAG, T, 8192, 256)

// The 1024 class of S4 runs 256 threads for f32 (4 per vector) and 128 for 16-bit types (8 per vector).
KV_SOFTMAX_ALL(f32, float, 256)
KV_SOFTMAX_ALL(f16, __half, 128)
KV_SOFTMAX_ALL(bf16, __nv_bfloat16, 128)
