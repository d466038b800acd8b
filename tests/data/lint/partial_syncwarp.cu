// A block reduction's second stage as cub-less reductions write it: lane i of warp 0 (i < warps) folds the 32
// partials of warp i, the lanes that fold meet at a __syncwarp naming exactly them, then each overwrites slot i,
// which lane 0 read while folding. The partial mask orders those lanes: no race.
template <bool RIGHT_MASK>
__device__ void fold_warps(const float* __restrict__ x, float* y) {
    __shared__ float s[1024];
    s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    const unsigned warps = blockDim.x / 32;
    // RIGHT_MASK: lanes 0 .. warps-1, the lanes that run it; else lane 0 is left out of the mask it runs
    const unsigned mask = (unsigned)((1ull << warps) - (RIGHT_MASK ? 1 : 2));
    float v = 0.f;
    if (threadIdx.x < warps) {
        for (int i = 0; i < 32; ++i) v += s[threadIdx.x * 32 + i];
        __syncwarp(mask);
        s[threadIdx.x] = v;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (unsigned i = 0; i < warps; ++i) t += s[i];
        y[blockIdx.x] = t;
    }
}
extern "C" __global__ void partial_syncwarp_ok(const float* x, float* y) { fold_warps<true>(x, y); }
extern "C" __global__ void partial_syncwarp_wrong_mask(const float* x, float* y) { fold_warps<false>(x, y); }
