// Reduction kernels of ours built on the CUDA toolkit's own cub (CCCL, found by nvcc without -I): templated
// over the I/O type and the block shape, instantiated explicitly, so their entries are C++-mangled names (as
// a real templated kernel's are; cub_spec.py names them). fp32 math; I/O f32 / f16 / bf16.
//   cub_rmsnorm<T, THREADS>:      one block per row, cub::BlockReduce<float, THREADS> (raking) for sum(x^2).
//   cub_warp_softmax<T, WARPS>:   one warp per row, WARPS rows per block, cub::WarpReduce<float> for the
//                                 (NaN-propagating) max and the sum, broadcast from lane 0 with __shfl_sync.
//   cub_block_sum<T, THREADS>:    y[row] = sum(x[row, :]), cub::BlockReduce with BLOCK_REDUCE_WARP_REDUCTIONS.
// cub's warp reductions are inline PTX with their own register scopes ({ .reg .f32 r0; .reg .pred p; ...
// shfl.sync.down.b32 r0|p, ...; @p add.f32 r0, r0, ...; }): what `verifier lint` must read (issue #23).
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// max that keeps a NaN (torch.softmax: a NaN anywhere makes the row NaN); symmetric in its operands.
struct NanMax {
    __device__ __forceinline__ float operator()(float a, float b) const {
        return (a != a || b != b) ? a + b : fmaxf(a, b);
    }
};

}  // namespace

template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS)
    cub_rmsnorm(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int M, int N, float eps) {
    using BlockReduce = cub::BlockReduce<float, THREADS>;
    __shared__ typename BlockReduce::TempStorage tmp;
    __shared__ float s_rstd;
    const T* xr = x + (size_t)blockIdx.x * N;
    float ss = 0.f;
    for (int i = threadIdx.x; i < N; i += THREADS) ss = fmaf(to_f(xr[i]), to_f(xr[i]), ss);
    const float total = BlockReduce(tmp).Sum(ss);  // valid in thread 0 only
    if (threadIdx.x == 0) s_rstd = 1.0f / sqrtf(total / (float)N + eps);
    __syncthreads();
    const float r = s_rstd;
    T* yr = y + (size_t)blockIdx.x * N;
    for (int i = threadIdx.x; i < N; i += THREADS) yr[i] = from_f<T>(to_f(xr[i]) * r * to_f(w[i]));
}

template <typename T, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) cub_warp_softmax(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
    using WarpReduce = cub::WarpReduce<float>;
    __shared__ typename WarpReduce::TempStorage tmp[WARPS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = blockIdx.x * WARPS + warp;
    if (row >= M) return;  // the last block's surplus warps (a whole warp leaves: no collective is split)
    const T* xr = x + (size_t)row * N;
    float m = -INFINITY;
    for (int i = lane; i < N; i += 32) m = NanMax()(m, to_f(xr[i]));
    m = __shfl_sync(0xffffffffu, WarpReduce(tmp[warp]).Reduce(m, NanMax()), 0);  // lane 0 holds the max
    float s = 0.f;
    for (int i = lane; i < N; i += 32) s += expf(to_f(xr[i]) - m);
    s = __shfl_sync(0xffffffffu, WarpReduce(tmp[warp]).Sum(s), 0);
    T* yr = y + (size_t)row * N;
    for (int i = lane; i < N; i += 32) yr[i] = from_f<T>(expf(to_f(xr[i]) - m) / s);
}

template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS) cub_block_sum(const T* __restrict__ x, T* __restrict__ y, int M, int N) {
    using BlockReduce = cub::BlockReduce<float, THREADS, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
    __shared__ typename BlockReduce::TempStorage tmp;
    const T* xr = x + (size_t)blockIdx.x * N;
    float s = 0.f;
    for (int i = threadIdx.x; i < N; i += THREADS) s += to_f(xr[i]);
    const float total = BlockReduce(tmp).Sum(s);
    if (threadIdx.x == 0) y[blockIdx.x] = from_f<T>(total);
}

#define KV_CUB_INSTANCES(T)                                                                                  \
    template __global__ void cub_rmsnorm<T, 256>(const T*, const T*, T*, int, int, float);                  \
    template __global__ void cub_warp_softmax<T, 4>(const T*, T*, int, int);                                \
    template __global__ void cub_block_sum<T, 256>(const T*, T*, int, int);
KV_CUB_INSTANCES(float)
KV_CUB_INSTANCES(__half)
KV_CUB_INSTANCES(__nv_bfloat16)
