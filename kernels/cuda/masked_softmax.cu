// Row softmax with attention's score transforms, one block per row, fp32 math, I/O f32 / f16 / bf16
// (masked_softmax_spec.py). Per element the logit is
//   z = x*scale;  z = softcap*tanhf(z/softcap) (softcap > 0);  z -= slope*|i + offset - j| (slopes);
//   z += mask (mask row stride smask; 0: one mask[N] for every row);  z = -inf where causal and j > i + offset,
// with i = row mod q_len (q_len > 0) or row. One online (m, s) pass over z (softmax_common.cuh: -inf adds
// nothing, NaN / +inf poison the row as torch does), the sink logit (sinks != null) pushed once into the merged
// state, then y = exp(z - m) / s. A row with nothing live (m = -inf, s = 0): zeros when `zeros`, else NaN
// (the spec declares which: masked_rows). Any N; x and the mask are read twice.
#include "softmax_common.cuh"

namespace {

constexpr int kThreads = 256;

struct Logits {
    float scale, softcap;
    int causal, offset, q_len;
};

template <typename T>
__device__ __forceinline__ float logit(const T* __restrict__ xr, const T* __restrict__ mr, float slope, int qi,
                                       int j, const Logits& p) {
    float z = kv::to_float(xr[j]) * p.scale;
    if (p.softcap > 0.f) z = p.softcap * tanhf(z / p.softcap);
    if (slope != 0.f) z -= slope * fabsf(static_cast<float>(qi + p.offset - j));
    if (mr != nullptr) z += kv::to_float(mr[j]);
    if (p.causal && j > qi + p.offset) z = -INFINITY;
    return z;
}

template <typename T>
__device__ void masked_softmax(const T* __restrict__ x, const T* __restrict__ mask, const float* __restrict__ slopes,
                               const float* __restrict__ sinks, T* __restrict__ y, int N, long long sx,
                               long long smask, long long sy, Logits p, int zeros) {
    __shared__ float scratch_m[32], scratch_s[32];
    const long long row = blockIdx.x;
    const T* xr = x + row * sx;
    const T* mr = mask != nullptr ? mask + row * smask : nullptr;
    T* yr = y + row * sy;
    const float slope = slopes != nullptr ? slopes[row] : 0.f;
    const int qi = p.q_len > 0 ? static_cast<int>(row % p.q_len) : static_cast<int>(row);
    kv::MS a = kv::ms_empty();
    for (int j = threadIdx.x; j < N; j += blockDim.x) kv::ms_push(a, logit(xr, mr, slope, qi, j, p));
    a = kv::block_ms(a, scratch_m, scratch_s);
    if (sinks != nullptr) kv::ms_push(a, sinks[row]);  // every thread holds the same state: the same result
    const bool dead = a.m == -INFINITY;  // no live logit: s = 0
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        const float v = dead ? (zeros ? 0.f : NAN) : kv::softmax_out(logit(xr, mr, slope, qi, j, p), a.m, a.s);
        yr[j] = kv::from_float<T>(v);
    }
}

}  // namespace

#define KV_MASKED_SOFTMAX(TAG, T)                                                                             \
    extern "C" __global__ void __launch_bounds__(kThreads) masked_softmax_##TAG(                              \
        const T* x, const T* mask, const float* slopes, const float* sinks, T* y, int M, int N, long long sx, \
        long long smask, long long sy, float scale, float softcap, int causal, int offset, int q_len,         \
        int zeros) {                                                                                          \
        masked_softmax<T>(x, mask, slopes, sinks, y, N, sx, smask, sy, Logits{scale, softcap, causal, offset, \
                          q_len}, zeros);                                                                     \
    }

KV_MASKED_SOFTMAX(f32, float)
KV_MASKED_SOFTMAX(f16, __half)
KV_MASKED_SOFTMAX(bf16, __nv_bfloat16)
