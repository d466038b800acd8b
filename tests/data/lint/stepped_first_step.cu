// Rows in a grid-stride loop, each folded across warps by a barrier-stepped tree in shared memory (warps
// y >= offset store their partial to slot y - offset, warps y < offset add it), then every thread reads the
// row's result from slot 0. The next row's first step stores to slot 0 again: without a barrier at the end of
// the row (RACY), that store (warp `offset` = blockDim.y / 2) races with the reads of the row before.
template <bool RACY>
__device__ void rows_tree(const float* __restrict__ x, float* y, int rows, int n) {
    __shared__ float s[32];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        float v = 0.f;
        for (int i = threadIdx.y * 32 + threadIdx.x; i < n; i += blockDim.x * blockDim.y) v += x[(long long)r * n + i];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        for (int offset = blockDim.y / 2; offset > 0; offset /= 2) {
            if (threadIdx.x == 0 && threadIdx.y >= offset && threadIdx.y < 2 * offset) s[threadIdx.y - offset] = v;
            __syncthreads();
            if (threadIdx.x == 0 && threadIdx.y < offset) v += s[threadIdx.y];
            __syncthreads();
        }
        if (threadIdx.x == 0 && threadIdx.y == 0) s[0] = v;
        __syncthreads();
        const float total = s[0];
        if (threadIdx.x == 0 && threadIdx.y == 0) y[r] = total;
        if (!RACY) __syncthreads();
    }
}
extern "C" __global__ void rows_tree_race(const float* x, float* y, int rows, int n) { rows_tree<true>(x, y, rows, n); }
extern "C" __global__ void rows_tree_ok(const float* x, float* y, int rows, int n) { rows_tree<false>(x, y, rows, n); }
