// Block all-reduce sum: y[row] = sum(x[row, :]), one block per row. Each thread accumulates a
// strided slice, then a warp xor-butterfly and a cross-warp pass through shared memory leave the
// total in every thread (the all-reduce); thread 0 writes it once.
// Variants differ in input dtype, accumulation dtype and packing (elements per load):
//   f32 -> f32, f32 acc:          x1, x4 (float4)
//   f16/bf16 -> same, f32 acc:    x1, x2, x8
//   f16/bf16 -> same, same acc:   x1 (scalar __hadd), x2, x8 (half2 / bf162 __hadd2)
//   e4m3/e5m2 -> f16, f16 acc:    x1, x16 (paired fp8x2 -> half2 conversion)
//   i8 -> i32, i32 acc:           x1, x16 (__dp4a against 0x01010101)
// Packed variants need N % P == 0 (the spec refuses the rest) and 16-byte aligned base pointers.
// blockDim.x must be a multiple of 32 (the spec launches AR_THREADS).
#include "common.cuh"

#include <string.h>

#define AR_THREADS 256

namespace {

// ---- accumulation-type algebra -------------------------------------------------------------
template <typename A> __device__ __forceinline__ A zero();
template <> __device__ __forceinline__ float zero<float>() { return 0.f; }
template <> __device__ __forceinline__ int zero<int>() { return 0; }
template <> __device__ __forceinline__ __half zero<__half>() { return __ushort_as_half(0); }
template <> __device__ __forceinline__ __half2 zero<__half2>() { return __half2half2(__ushort_as_half(0)); }
template <> __device__ __forceinline__ __nv_bfloat16 zero<__nv_bfloat16>() { return __ushort_as_bfloat16(0); }
template <> __device__ __forceinline__ __nv_bfloat162 zero<__nv_bfloat162>() {
    return __bfloat162bfloat162(__ushort_as_bfloat16(0));
}

__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ int add(int a, int b) { return a + b; }
__device__ __forceinline__ __half add(__half a, __half b) { return __hadd(a, b); }
__device__ __forceinline__ __half2 add(__half2 a, __half2 b) { return __hadd2(a, b); }
__device__ __forceinline__ __nv_bfloat16 add(__nv_bfloat16 a, __nv_bfloat16 b) { return __hadd(a, b); }
__device__ __forceinline__ __nv_bfloat162 add(__nv_bfloat162 a, __nv_bfloat162 b) { return __hadd2(a, b); }

// Block all-reduce in the accumulation type A (every thread returns the total). `scratch` holds 32 A.
template <typename A>
__device__ __forceinline__ A block_allreduce(A v, A* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = add(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    v = lane < nwarps ? scratch[lane] : zero<A>();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = add(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// ---- element conversion into the accumulator, and the accumulator into the output ----------
template <typename A, typename In> __device__ __forceinline__ A to_acc(In v);
template <> __device__ __forceinline__ float to_acc<float, float>(float v) { return v; }
template <> __device__ __forceinline__ float to_acc<float, __half>(__half v) { return kv::to_float(v); }
template <> __device__ __forceinline__ float to_acc<float, __nv_bfloat16>(__nv_bfloat16 v) { return kv::to_float(v); }
template <> __device__ __forceinline__ __half to_acc<__half, __half>(__half v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 to_acc<__nv_bfloat16, __nv_bfloat16>(__nv_bfloat16 v) { return v; }
template <> __device__ __forceinline__ __half to_acc<__half, __nv_fp8_e4m3>(__nv_fp8_e4m3 v) { return __half(v); }
template <> __device__ __forceinline__ __half to_acc<__half, __nv_fp8_e5m2>(__nv_fp8_e5m2 v) { return __half(v); }
template <> __device__ __forceinline__ int to_acc<int, int8_t>(int8_t v) { return v; }

template <typename Out> __device__ __forceinline__ Out finish(float v) { return kv::from_float<Out>(v); }
template <typename Out> __device__ __forceinline__ Out finish(int v) { return v; }
template <typename Out> __device__ __forceinline__ Out finish(__half v) { return v; }
template <typename Out> __device__ __forceinline__ Out finish(__nv_bfloat16 v) { return v; }
template <typename Out> __device__ __forceinline__ Out finish(__half2 v) { return __hadd(__low2half(v), __high2half(v)); }
template <typename Out> __device__ __forceinline__ Out finish(__nv_bfloat162 v) {
    return __hadd(__low2bfloat16(v), __high2bfloat16(v));
}

// ---- one element per load -------------------------------------------------------------------
template <typename In, typename A, typename Out>
__device__ void reduce_x1(const In* __restrict__ x, Out* __restrict__ y, int N) {
    __shared__ uint2 raw[32];  // 8 bytes per warp: fits every A here
    const In* xr = x + (long long)blockIdx.x * N;
    A acc = zero<A>();
    for (int i = threadIdx.x; i < N; i += blockDim.x) acc = add(acc, to_acc<A>(xr[i]));
    acc = block_allreduce(acc, reinterpret_cast<A*>(raw));
    if (threadIdx.x == 0) y[blockIdx.x] = finish<Out>(acc);
}

// ---- P elements per load, as 4-byte words ---------------------------------------------------
template <int BYTES> struct RawT;
template <> struct RawT<4> { using type = uint32_t; };
template <> struct RawT<8> { using type = uint2; };
template <> struct RawT<16> { using type = uint4; };

template <typename In, int P>
union Chunk {
    static constexpr int kBytes = P * (int)sizeof(In);
    static constexpr int kWords = kBytes / 4;
    typename RawT<kBytes>::type raw;
    uint32_t w[kWords];
    In e[P];
};

template <typename H2>
__device__ __forceinline__ H2 word_as(uint32_t w) {
    H2 h;
    memcpy(&h, &w, sizeof(h));  // bit reinterpretation; compiles to a register move
    return h;
}

template <typename Fp8> struct Fp8Kind;
template <> struct Fp8Kind<__nv_fp8_e4m3> { static constexpr __nv_fp8_interpretation_t value = __NV_E4M3; };
template <> struct Fp8Kind<__nv_fp8_e5m2> { static constexpr __nv_fp8_interpretation_t value = __NV_E5M2; };

// fp32 accumulation: every element converted and added in order.
template <typename In, int P>
__device__ __forceinline__ float accumulate(float acc, const Chunk<In, P>& c) {
#pragma unroll
    for (int j = 0; j < P; ++j) acc += kv::to_float(c.e[j]);
    return acc;
}
// Same-dtype accumulation: pairs added lane-wise with __hadd2.
template <int P>
__device__ __forceinline__ __half2 accumulate(__half2 acc, const Chunk<__half, P>& c) {
#pragma unroll
    for (int j = 0; j < Chunk<__half, P>::kWords; ++j) acc = __hadd2(acc, word_as<__half2>(c.w[j]));
    return acc;
}
template <int P>
__device__ __forceinline__ __nv_bfloat162 accumulate(__nv_bfloat162 acc, const Chunk<__nv_bfloat16, P>& c) {
#pragma unroll
    for (int j = 0; j < Chunk<__nv_bfloat16, P>::kWords; ++j) acc = __hadd2(acc, word_as<__nv_bfloat162>(c.w[j]));
    return acc;
}
// fp8 into f16: each 4-byte word holds two fp8x2 pairs, converted exactly to half2.
template <typename Fp8, int P>
__device__ __forceinline__ __half2 accumulate(__half2 acc, const Chunk<Fp8, P>& c) {
#pragma unroll
    for (int j = 0; j < Chunk<Fp8, P>::kWords; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const auto pair = (__nv_fp8x2_storage_t)((c.w[j] >> (16 * h)) & 0xffffu);
            acc = __hadd2(acc, __half2(__nv_cvt_fp8x2_to_halfraw2(pair, Fp8Kind<Fp8>::value)));
        }
    }
    return acc;
}
// int8 into int32: dp4a with all-ones bytes sums the four signed bytes of a word exactly.
template <int P>
__device__ __forceinline__ int accumulate(int acc, const Chunk<int8_t, P>& c) {
#pragma unroll
    for (int j = 0; j < Chunk<int8_t, P>::kWords; ++j) acc = __dp4a((int)c.w[j], 0x01010101, acc);
    return acc;
}

template <typename In, typename A, typename Out, int P>
__device__ void reduce_packed(const In* __restrict__ x, Out* __restrict__ y, int N) {
    using C = Chunk<In, P>;
    using R = typename RawT<C::kBytes>::type;
    __shared__ uint2 raw[32];
    const R* xr = reinterpret_cast<const R*>(x + (long long)blockIdx.x * N);  // N % P == 0: aligned rows
    const int nchunks = N / P;
    A acc = zero<A>();
    for (int i = threadIdx.x; i < nchunks; i += blockDim.x) {
        C c;
        c.raw = xr[i];
        acc = accumulate(acc, c);
    }
    acc = block_allreduce(acc, reinterpret_cast<A*>(raw));
    if (threadIdx.x == 0) y[blockIdx.x] = finish<Out>(acc);
}

}  // namespace

#define AR_X1(In, A, Out, tag)                                                                       \
    extern "C" __global__ void __launch_bounds__(AR_THREADS) allreduce_x1_##tag(const In* x, Out* y, int M, int N) { \
        reduce_x1<In, A, Out>(x, y, N);                                                              \
    }
#define AR_XP(In, A, Out, P, tag)                                                                    \
    extern "C" __global__ void __launch_bounds__(AR_THREADS) allreduce_x##P##_##tag(const In* x, Out* y, int M, int N) { \
        reduce_packed<In, A, Out, P>(x, y, N);                                                       \
    }

AR_X1(float, float, float, f32)
AR_XP(float, float, float, 4, f32)

AR_X1(__half, float, __half, f16)
AR_XP(__half, float, __half, 2, f16)
AR_XP(__half, float, __half, 8, f16)
AR_X1(__nv_bfloat16, float, __nv_bfloat16, bf16)
AR_XP(__nv_bfloat16, float, __nv_bfloat16, 2, bf16)
AR_XP(__nv_bfloat16, float, __nv_bfloat16, 8, bf16)

AR_X1(__half, __half, __half, f16_f16acc)
AR_XP(__half, __half2, __half, 2, f16_f16acc)
AR_XP(__half, __half2, __half, 8, f16_f16acc)
AR_X1(__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, bf16_bf16acc)
AR_XP(__nv_bfloat16, __nv_bfloat162, __nv_bfloat16, 2, bf16_bf16acc)
AR_XP(__nv_bfloat16, __nv_bfloat162, __nv_bfloat16, 8, bf16_bf16acc)

AR_X1(__nv_fp8_e4m3, __half, __half, e4m3tof16_f16acc)
AR_XP(__nv_fp8_e4m3, __half2, __half, 16, e4m3tof16_f16acc)
AR_X1(__nv_fp8_e5m2, __half, __half, e5m2tof16_f16acc)
AR_XP(__nv_fp8_e5m2, __half2, __half, 16, e5m2tof16_f16acc)

AR_X1(int8_t, int, int, i8toi32_i32acc)
AR_XP(int8_t, int, int, 16, i8toi32_i32acc)
