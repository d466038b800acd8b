// Cross entropy with its variants (ops cross_entropy and cross_entropy_reduced): softcap, label smoothing, z_loss,
// and the batch's mean / sum. One block per row as cross_entropy.cu: each thread runs the online (max, sum) over its
// strided columns of the capped logits x' = cap·tanhf(x / cap) (cap > 0; tanhf(+-inf) = +-1, NaN stays NaN) and
// their plain sum for the smoothing term; the block merges them; thread 0 writes
//   loss = (1 - eps)·(lse - x'[label]) + eps·(lse - sum/N) + z·lse²,   lse = m + logf(s),
// the eps and z terms only when eps > 0 / z > 0 (0·inf would be NaN). An ignored row writes 0 and reads no logits.
// ce_var_batch_i64 (one block) sums the per-row losses in a fixed order and, for the mean, divides by the count of
// non-ignored labels (none: 0/0 = NaN, as PyTorch). Logits f32 / f16 / bf16, int64 labels, float32 loss; rows of x
// lie sx elements apart (int64).
#include "softmax_common.cuh"

namespace {

constexpr int kCeThreads = 256;

__device__ __forceinline__ float softcap(float v, float cap) { return cap > 0.f ? cap * tanhf(v / cap) : v; }

template <typename T>
__device__ void ce_var_row(const T* __restrict__ x, const long long* __restrict__ labels, float* __restrict__ loss,
                           int N, long long ignore_index, long long sx, float eps, float z, float cap) {
    __shared__ float scratch_m[32], scratch_s[32], scratch_x[32];
    const int row = blockIdx.x;
    const long long label = labels[row];
    if (label == ignore_index) {  // uniform across the block: no thread reaches a block merge
        if (threadIdx.x == 0) loss[row] = 0.f;
        return;
    }
    const T* xr = x + (long long)row * sx;
    kv::MS a = kv::ms_empty();
    float sum = 0.f;
    for (int c = threadIdx.x; c < N; c += blockDim.x) {
        const float v = softcap(kv::to_float(xr[c]), cap);
        kv::ms_push(a, v);
        sum += v;
    }
    a = kv::block_ms(a, scratch_m, scratch_s);
    if (eps > 0.f) sum = kv::block_sum(sum, scratch_x);  // eps is a kernel argument: uniform, every thread syncs
    if (threadIdx.x == 0) {
        const float lse = a.m + logf(a.s);
        float l = lse - softcap(kv::to_float(xr[label]), cap);
        if (eps > 0.f) l = (1.f - eps) * l + eps * (lse - sum / (float)N);
        if (z > 0.f) l += z * lse * lse;
        loss[row] = l;
    }
}

// Block-wide integer sum (blockDim.x a multiple of 32); every thread gets it.
__device__ __forceinline__ long long block_count(long long v, long long* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < ((blockDim.x + 31) >> 5)) ? scratch[lane] : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

}  // namespace

#define KV_CE_VAR(TAG, T)                                                                                   \
    extern "C" __global__ void __launch_bounds__(kCeThreads)                                               \
        ce_var_rows_##TAG##_i64(const T* x, const long long* labels, float* loss, int M, int N,            \
                                long long ignore_index, long long sx, float eps, float z, float cap) {     \
        ce_var_row<T>(x, labels, loss, N, ignore_index, sx, eps, z, cap);                                 \
    }

KV_CE_VAR(f32, float)
KV_CE_VAR(f16tof32, __half)
KV_CE_VAR(bf16tof32, __nv_bfloat16)

extern "C" __global__ void __launch_bounds__(kCeThreads)
    ce_var_batch_i64(const float* rows, const long long* labels, float* out, int M, long long ignore_index, int mean) {
    __shared__ float scratch[32];
    __shared__ long long scratch_n[32];
    float s = 0.f;
    long long n = 0;
    for (int r = threadIdx.x; r < M; r += blockDim.x) {
        s += rows[r];  // ignored rows hold 0
        n += labels[r] != ignore_index;
    }
    s = kv::block_sum(s, scratch);
    n = block_count(n, scratch_n);
    if (threadIdx.x == 0) out[0] = mean ? s / (float)n : s;
}
