// Cross entropy over the vocabulary, per row: loss = logsumexp(x) - x[label], float32, no reduction.
// One block per row: each thread runs the online (max m, sum s = sum exp(x - m)) over its strided
// columns, the block merges the states (softmax_common.cuh, with its -inf / NaN guards), then
// thread 0 writes (m + logf(s)) - x[label]. A row whose label is ignore_index writes 0 and reads
// no logits. Logits f32 / f16 / bf16, labels int64 or int32. Special values as torch: NaN or +inf
// in a row, or an all -inf row (m = -inf, s = 0: -inf - -inf), give NaN; a -inf logit at the label
// gives +inf. Rows of x lie sx elements apart (the launch passes its row stride, int64; contiguous rows: N).
#include "softmax_common.cuh"

namespace {

constexpr int kCeThreads = 256;

template <typename T, typename L>
__device__ void ce_row(const T* __restrict__ x, const L* __restrict__ labels, float* __restrict__ loss, int N,
                       long long ignore_index, long long sx) {
    __shared__ float scratch_m[32], scratch_s[32];
    const int row = blockIdx.x;
    const long long label = static_cast<long long>(labels[row]);
    if (label == ignore_index) {  // uniform across the block: no thread reaches the block merge
        if (threadIdx.x == 0) loss[row] = 0.f;
        return;
    }
    const T* xr = x + (long long)row * sx;
    kv::MS a = kv::ms_empty();
    for (int c = threadIdx.x; c < N; c += blockDim.x) kv::ms_push(a, kv::to_float(xr[c]));
    a = kv::block_ms(a, scratch_m, scratch_s);
    if (threadIdx.x == 0) loss[row] = (a.m + logf(a.s)) - kv::to_float(xr[label]);
}

}  // namespace

#define KV_CE(TAG, T, LTAG, L)                                                                             \
    extern "C" __global__ void __launch_bounds__(kCeThreads)                                              \
        cross_entropy_##TAG##_##LTAG(const T* x, const L* labels, float* loss, int M, int N,              \
                                     long long ignore_index, long long sx) {                              \
        ce_row<T, L>(x, labels, loss, N, ignore_index, sx);                                               \
    }
#define KV_CE_ALL(TAG, T) KV_CE(TAG, T, i64, long long) KV_CE(TAG, T, i32, int)

KV_CE_ALL(f32, float)
KV_CE_ALL(f16tof32, __half)
KV_CE_ALL(bf16tof32, __nv_bfloat16)
