// Library-style block reductions for tests/test_lint_library.py (issue #35 item 12), written after the pattern of
// cub's BlockReduce (warp reductions, then the warp aggregates through shared memory), launched with
// min(N, 1024) threads: the last warp is partial, yet every shuffle names the full warp (0xffffffff). Lanes
// past the block do not exist: they never block a shfl.sync (it waits for the non-exited threads of its mask
// only), and what a lane reads from one is undefined. *_ok: no value read from an absent lane reaches the output;
// *_bad: one does (the lint must report it).
//   clamp_ok: the shuffle's clamp operand is the warp's last valid lane (cub's arithmetic ReduceStep, inline
//     asm `shfl.sync.down.b32 r0|p, ...; @p add.f32`): a source lane past it is out of range, p is false and the
//     add is skipped. No lane ever reads an absent one.
//   select_ok: the plain intrinsic (clamp 31) reads absent lanes in the partial warp; the result is kept only
//     where `lane + offset < valid` (cub's generic ReduceStep), so what was read there is discarded.
//   unguarded_bad: the same tree without the select: lane 0 of a 16-lane last warp adds what it read from
//     lane 16, which does not exist, and stores the sum.
//   select_wrong_bound_bad: the select compares with 32, not with the warp's valid count: absent lanes' values
//     are kept.
// A block of 1024 (N >= 1024) has no partial warp; N = 33 gives a last warp of one lane.

__device__ __forceinline__ int warp_valid() {
    const int warp = threadIdx.x >> 5;
    const int v = (int)blockDim.x - warp * 32;
    return v < 32 ? v : 32;
}

__device__ __forceinline__ float warp_reduce_clamp(float v, int valid) {
    const int last = valid - 1;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
        float r;
        asm volatile("{\n\t.reg .f32 t;\n\t.reg .pred p;\n\t"
                     "shfl.sync.down.b32 t|p, %1, %2, %3, %4;\n\t"
                     "@p add.f32 t, t, %1;\n\t"
                     "mov.f32 %0, t;\n\t}"
                     : "=f"(r) : "f"(v), "r"(o), "r"(last), "r"(0xffffffffu));
        v = r;
    }
    return v;
}

template <bool SELECT, bool RIGHT_BOUND>
__device__ __forceinline__ float warp_reduce_select(float v, int valid) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
        const float t = __shfl_down_sync(0xffffffffu, v, o);
        if (!SELECT || lane + o < (RIGHT_BOUND ? valid : 32)) v += t;
    }
    return v;
}

template <int KIND>
__device__ __forceinline__ void block_sum(const float* __restrict__ x, float* __restrict__ y, int N) {
    __shared__ float part[32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float v = 0.f;
    for (int i = t; i < N; i += blockDim.x) v += x[(size_t)blockIdx.x * N + i];
    const int valid = warp_valid();
    v = KIND == 0 ? warp_reduce_clamp(v, valid)
        : KIND == 1 ? warp_reduce_select<true, true>(v, valid)
        : KIND == 2 ? warp_reduce_select<false, true>(v, valid)
                    : warp_reduce_select<true, false>(v, valid);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (t == 0) {
        const int nwarps = (blockDim.x + 31) >> 5;
        float s = part[0];
        for (int w = 1; w < nwarps; ++w) s += part[w];
        y[blockIdx.x] = s;
    }
}

extern "C" __global__ void clamp_ok(const float* x, float* y, int N) { block_sum<0>(x, y, N); }
extern "C" __global__ void select_ok(const float* x, float* y, int N) { block_sum<1>(x, y, N); }
extern "C" __global__ void unguarded_bad(const float* x, float* y, int N) { block_sum<2>(x, y, N); }
extern "C" __global__ void select_wrong_bound_bad(const float* x, float* y, int N) { block_sum<3>(x, y, N); }

// A warp tree without the select whose lane 0 stores its sum as one half of a float2 (a vector store: the value
// read from a missing lane reaches the output through the packed pair).
extern "C" __global__ void vector_store_bad(const float* x, float2* y, int N) {
    float v = x[(size_t)blockIdx.x * blockDim.x + threadIdx.x];
    for (int o = 1; o < 32; o *= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) y[blockIdx.x * 32 + (threadIdx.x >> 5)] = make_float2(v, 1.f);
}
