// Warp-synchronous shared-memory cases for tests/test_lint_warpsync.py (128-thread blocks, 4 warps, one slot or
// one 32-float row of `s` per warp). *_ok: no hazard; *_race: a hazard the lint must report.
extern "C" __global__ void __launch_bounds__(128) bcast_store_ok(const float* __restrict__ x, float* y) {
    __shared__ float s[4];
    const int t = blockIdx.x * 128 + threadIdx.x, warp = threadIdx.x >> 5;
    s[warp] = __shfl_sync(0xffffffffu, x[t], 0);  // every lane stores lane 0's value
    __syncwarp();
    y[t] = s[warp];
}

extern "C" __global__ void __launch_bounds__(128) uniform_store_ok(const float* __restrict__ x, float* y) {
    __shared__ float s0;
    s0 = 2.f * x[0];  // every thread of the block stores the same value
    __syncthreads();
    y[blockIdx.x * 128 + threadIdx.x] = s0;
}

// Lane 0 stores, lanes 0..15 meet at a __syncwarp(0x0000ffff), every lane reads: lanes 16..31 are not ordered.
extern "C" __global__ void __launch_bounds__(128) half_syncwarp_race(const float* __restrict__ x, float* y) {
    __shared__ float s[4];
    const int t = blockIdx.x * 128 + threadIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) s[warp] = x[t];
    if (lane < 16) __syncwarp(0x0000ffffu);
    y[t] = s[warp];
}

// The pre-Volta warp-synchronous tree in shared memory: without __syncwarp between its steps, lane j reads
// s[j + o] that lane j + o wrote in the step before (RAW); with it, the tree is correct.
template <bool SYNC>
__device__ void warp_tree(const float* __restrict__ x, float* y) {
    __shared__ float s[128];
    const int t = blockIdx.x * 128 + threadIdx.x, lane = threadIdx.x & 31;
    float* row = s + (threadIdx.x & ~31);
    row[lane] = x[t];
    if (SYNC) __syncwarp();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        if (lane < o) row[lane] += row[lane + o];
        if (SYNC) __syncwarp();
    }
    y[t] = row[0];
}
extern "C" __global__ void __launch_bounds__(128) warp_tree_ok(const float* x, float* y) { warp_tree<true>(x, y); }
extern "C" __global__ void __launch_bounds__(128) warp_tree_race(const float* x, float* y) { warp_tree<false>(x, y); }

// A block-strided loop without a barrier: thread t stores s[t], s[t + 128], ... (threads never meet); the racy
// form strides by a warp, so thread t + 32 stores in its first iteration what thread t stores in its second.
template <int STRIDE>
__device__ void strided(const float* __restrict__ x, float* y, int N) {
    __shared__ float s[4096];
    for (int i = threadIdx.x; i < N && i < 4096; i += STRIDE) s[i] = x[(long long)blockIdx.x * N + i];
    __syncthreads();
    for (int i = threadIdx.x; i < N && i < 4096; i += 128) y[(long long)blockIdx.x * N + i] = s[4095 - i];
}
extern "C" __global__ void __launch_bounds__(128) strided_store_ok(const float* x, float* y, int N) { strided<128>(x, y, N); }
extern "C" __global__ void __launch_bounds__(128) strided_store_race(const float* x, float* y, int N) { strided<32>(x, y, N); }
