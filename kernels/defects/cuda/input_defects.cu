// Defects that only the inputs real callers pass expose (bf16 I/O, fp32 math), each next to its correct form.
// Every kernel here is right on a fresh contiguous torch.randn tensor; see kernels/defects/cuda/defects.py.
//   rms_rows_ok: RMSNorm, one block per row, rows at the launch's row strides, offsets in 64 bits (twin).
//   rms_rows_int32_offset: the row offset computed in int (`int base = row * stride`): past 2^31 elements it
//     wraps negative, an illegal address (PyTorch's and Liger-Kernel's cross entropy shipped this).
//   rms_rows_unsigned_offset: the row offset as an unsigned 32-bit product (`unsigned base = row * stride`): right
//     past 2^31 elements, past 2^32 it wraps onto row r - 2^32 / N, read and written there (issue #36).
//   rms_rows_grid_y: one block per row on grid.y (`row = blockIdx.y`): more than 65,535 rows do not launch.
//   rms_rows_int32_stride: 64-bit row offsets, but the row stride narrowed to int first (`int s = x.stride(0)`):
//     right on contiguous rows and small strides, a stride of 2^31 or more wraps negative (an illegal address).
//   rms_rows_ignores_stride: takes the row strides and reads row r at r * N: right on contiguous rows, wrong on
//     a slice qkv[:, :N] (norms in two serving engines were reported wrong on exactly that layout).
//   far_vec_ok / far_vec_unchecked: fused residual add + RMSNorm with 16-byte vector loads when N % 8 == 0;
//     the twin also checks that every pointer and row stride keeps 16-byte alignment (else scalar loads), the
//     defect decides from N alone and faults with "misaligned address" on a view one element into a buffer.
//   ce_neg_log_p: cross entropy as -log(softmax(x)[label]) = -log(exp(x_t - m) / s): exp underflows to 0 once
//     x_t is about 104 below the max, giving +inf where the loss is finite (twin: kernels/cuda/cross_entropy.cu).
#include "../../cuda/common.cuh"

#define THREADS 256

namespace {

__device__ __forceinline__ float rstd_of(float ss, int N, float eps) { return 1.0f / sqrtf(ss / (float)N + eps); }

enum Offset { kWide, kInt, kUnsigned, kIntStride };

// OFFSET: how the row offset is formed (kWide: 64 bits, the twin); USE_STRIDE: rows at the strides (else at N);
// GRID_Y: the row is blockIdx.y (else blockIdx.x).
template <Offset OFFSET, bool USE_STRIDE, bool GRID_Y = false>
__device__ void rms_rows(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                         __nv_bfloat16* __restrict__ y, int N, long long sx, long long sy, float eps) {
    __shared__ float scratch[32];
    const long long rx = USE_STRIDE ? sx : N, ry = USE_STRIDE ? sy : N;
    const unsigned row = GRID_Y ? blockIdx.y : blockIdx.x;
    long long ox, oy;
    if (OFFSET == kWide) {
        ox = (long long)row * rx;
        oy = (long long)row * ry;
    } else if (OFFSET == kUnsigned) {
        // The defect: an unsigned 32-bit product, right up to 2^32 elements, then it wraps onto an earlier row.
        const unsigned bx = row * (unsigned)rx, by = row * (unsigned)ry;
        ox = bx;
        oy = by;
    } else if (OFFSET == kIntStride) {
        // The defect: the strides narrowed to int before a 64-bit product; 2^31 or more wraps negative.
        const int nx = (int)rx, ny = (int)ry;
        ox = (long long)row * nx;
        oy = (long long)row * ny;
    } else {
        // The defect: `int base = blockIdx.x * N` (unsigned arithmetic, stored into an int): past 2^31 elements
        // the offset wraps negative, as in the cross-entropy kernels that shipped it.
        const int bx = row * (int)rx, by = row * (int)ry;
        ox = bx;
        oy = by;
    }
    const __nv_bfloat16* xr = x + ox;
    __nv_bfloat16* yr = y + oy;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += THREADS) {
        const float v = kv::to_float(xr[i]);
        ss = fmaf(v, v, ss);
    }
    const float r = rstd_of(kv::block_sum(ss, scratch), N, eps);
    for (int i = threadIdx.x; i < N; i += THREADS)
        yr[i] = kv::from_float<__nv_bfloat16>(kv::to_float(xr[i]) * r * kv::to_float(w[i]));
}

constexpr int kVec = 8;  // bf16 elements in 16 bytes

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// r = x + residual (fp32), residual <- round(r), y = r * rstd * w; rows at the strides.
template <bool CHECK_ALIGNMENT>
__device__ void far_vec(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ res,
                        const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y, int N, long long sx,
                        long long sr, long long sy, float eps) {
    __shared__ float scratch[32];
    const __nv_bfloat16* xr = x + (long long)blockIdx.x * sx;
    __nv_bfloat16* rr = res + (long long)blockIdx.x * sr;
    __nv_bfloat16* yr = y + (long long)blockIdx.x * sy;
    bool vec = N % kVec == 0;  // the defect stops here
    if (CHECK_ALIGNMENT)
        vec = vec && aligned16(xr) && aligned16(rr) && aligned16(w) && aligned16(yr);  // every row (strides too)
    float ss = 0.f;
    if (vec) {
        for (int c = threadIdx.x; c < N / kVec; c += THREADS) {
            union { uint4 u; __nv_bfloat16 e[kVec]; } a, b;
            a.u = reinterpret_cast<const uint4*>(xr)[c];
            b.u = reinterpret_cast<const uint4*>(rr)[c];
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
                const float v = kv::to_float(a.e[k]) + kv::to_float(b.e[k]);
                ss = fmaf(v, v, ss);
                b.e[k] = kv::from_float<__nv_bfloat16>(v);
            }
            reinterpret_cast<uint4*>(rr)[c] = b.u;  // this thread re-reads only what it wrote, below
        }
    } else {
        for (int i = threadIdx.x; i < N; i += THREADS) {
            const float v = kv::to_float(xr[i]) + kv::to_float(rr[i]);
            ss = fmaf(v, v, ss);
        }
    }
    const float r = rstd_of(kv::block_sum(ss, scratch), N, eps);
    if (vec) {
        for (int c = threadIdx.x; c < N / kVec; c += THREADS) {
            union { uint4 u; __nv_bfloat16 e[kVec]; } b, o, ww;
            b.u = reinterpret_cast<const uint4*>(rr)[c];
            ww.u = reinterpret_cast<const uint4*>(w)[c];
#pragma unroll
            for (int k = 0; k < kVec; ++k)  // y from the stored (rounded) residual, as vLLM's vector path does
                o.e[k] = kv::from_float<__nv_bfloat16>(kv::to_float(b.e[k]) * r * kv::to_float(ww.e[k]));
            reinterpret_cast<uint4*>(yr)[c] = o.u;
        }
    } else {
        for (int i = threadIdx.x; i < N; i += THREADS) {
            const float v = kv::to_float(xr[i]) + kv::to_float(rr[i]);
            rr[i] = kv::from_float<__nv_bfloat16>(v);
            yr[i] = kv::from_float<__nv_bfloat16>(v * r * kv::to_float(w[i]));
        }
    }
}

constexpr int kCe = 256;

// Cross entropy without the log-domain: m = max, s = sum exp(x - m), loss = -log(exp(x_t - m) / s).
__device__ void ce_neg_log_p(const __nv_bfloat16* __restrict__ x, const long long* __restrict__ labels,
                             float* __restrict__ loss, int N, long long ignore_index) {
    __shared__ float scratch[32];
    const long long label = labels[blockIdx.x];
    if (label == ignore_index) {
        if (threadIdx.x == 0) loss[blockIdx.x] = 0.f;
        return;
    }
    const __nv_bfloat16* xr = x + (long long)blockIdx.x * N;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < N; i += kCe) m = fmaxf(m, kv::to_float(xr[i]));
    m = kv::block_max(m, scratch);
    float s = 0.f;
    for (int i = threadIdx.x; i < N; i += kCe) s += expf(kv::to_float(xr[i]) - m);
    s = kv::block_sum(s, scratch);
    if (threadIdx.x == 0) loss[blockIdx.x] = -logf(expf(kv::to_float(xr[label]) - m) / s);
}

}  // namespace

#define RMS_ROWS(name, OFFSET, STRIDE, GRID_Y)                                                              \
    extern "C" __global__ void __launch_bounds__(THREADS)                                                 \
        name(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int M, int N, long long sx, \
             long long sy, float eps) {                                                                    \
        rms_rows<OFFSET, STRIDE, GRID_Y>(x, w, y, N, sx, sy, eps);                                         \
    }
RMS_ROWS(rms_rows_ok_bf16, kWide, true, false)
RMS_ROWS(rms_rows_int32_offset_bf16, kInt, true, false)
RMS_ROWS(rms_rows_ignores_stride_bf16, kWide, false, false)
RMS_ROWS(rms_rows_unsigned_offset_bf16, kUnsigned, true, false)
RMS_ROWS(rms_rows_grid_y_bf16, kWide, true, true)
RMS_ROWS(rms_rows_int32_stride_bf16, kIntStride, true, false)

#define FAR_VEC(name, CHECK)                                                                               \
    extern "C" __global__ void __launch_bounds__(THREADS)                                                 \
        name(const __nv_bfloat16* x, __nv_bfloat16* residual, const __nv_bfloat16* w, __nv_bfloat16* y,   \
             int M, int N, long long sx, long long sr, long long sy, float eps) {                          \
        far_vec<CHECK>(x, residual, w, y, N, sx, sr, sy, eps);                                             \
    }
FAR_VEC(far_vec_ok_bf16, true)
FAR_VEC(far_vec_unchecked_bf16, false)

extern "C" __global__ void __launch_bounds__(kCe)
    ce_neg_log_p_bf16tof32_i64(const __nv_bfloat16* x, const long long* labels, float* loss, int M, int N,
                               long long ignore_index) {
    ce_neg_log_p(x, labels, loss, N, ignore_index);
}
