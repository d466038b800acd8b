// Two block reductions through one shared buffer, the barrier between them only where the block has several warps
// (`if (blockDim.x > 32) __syncthreads();`, as ggml's soft_max_f32 with a run-time block size): for each launched
// block shape, the branch goes one way in every thread (tests/test_lint_shape_branches.py).
__device__ float block_sum(float v, float* s) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (blockDim.x > 32) {  // one warp: the shuffles did it, the buffer is not touched
        if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
        __syncthreads();
        v = threadIdx.x % 32 < blockDim.x / 32 ? s[threadIdx.x % 32] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

__device__ void sum_and_squares(const float* x, float* y, int N, int several) {
    __shared__ float s[32];
    const float* r = x + (long long)blockIdx.x * N;
    const int block_size = blockDim.x;  // signed, as ggml's: its test is not the one in block_sum
    float a = 0.f, b = 0.f;
    for (int i = threadIdx.x; i < N; i += block_size) a += r[i];
    a = block_sum(a, s);
    for (int i = threadIdx.x; i < N; i += block_size) b += (r[i] - a) * (r[i] - a);
    if (block_size > several) __syncthreads();  // the reads of s above end before the next writes
    b = block_sum(b, s);
    if (threadIdx.x == 0) y[blockIdx.x] = a + b;
}

// the barrier wherever the buffer is used: clean at every block shape
extern "C" __global__ void guarded_sync_ok(const float* x, float* y, int M, int N) { sum_and_squares(x, y, N, 32); }
// no barrier at two warps: warp 1 still reads s[0] as thread 0 writes it again
extern "C" __global__ void guarded_sync_bad(const float* x, float* y, int M, int N) { sum_and_squares(x, y, N, 64); }
