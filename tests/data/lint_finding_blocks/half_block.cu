// A full-mask warp sum whose host halves the block for 16-bit types (FasterTransformer's T5 layernorm launches
// n / 2 threads for half): at 32 columns that is a block of 16 threads, where lanes 16..31 do not exist.
extern "C" __global__ void row_sumsq(const float* x, float* y, int n) {
    __shared__ float part[32];
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) { float v = x[(long long)blockIdx.x * n + i]; s += v * v; }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int w = 0; w < (blockDim.x + 31) / 32; ++w) t += part[w];
        y[blockIdx.x] = t;
    }
}
