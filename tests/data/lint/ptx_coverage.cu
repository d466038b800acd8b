// Instructions nvcc emits for sm_80 / sm_90 beyond the bundled kernels' (tests/test_lint_ptx.py parses the
// PTX of every entry with 0 unread statements, and lints the ones tests/test_lint_warpsync.py names).
//   vectors and non-coherent loads (float4, __ldg), prmt (__byte_perm), cp.async with commit/wait groups
//   (__pipeline_memcpy_async), redux.sync (__reduce_add_sync), match.sync (__match_any_sync / all),
//   vote.sync, activemask, elect.sync (inline asm with a scoped predicate, as CUTLASS writes it),
//   griddepcontrol (cudaGridDependencySynchronize), cluster barriers and DSMEM (mapa, sm_90).
#include <cooperative_groups.h>
#include <cuda_pipeline.h>
#include <stdint.h>

namespace cg = cooperative_groups;

extern "C" __global__ void __launch_bounds__(128) vec_nc_prmt(const float4* __restrict__ x, float4* y,
                                                               const unsigned* __restrict__ b, unsigned* c) {
    const int t = blockIdx.x * 128 + threadIdx.x;
    float4 v = __ldg(x + t);
    v.x += v.w;
    y[t] = v;
    c[t] = __byte_perm(b[t], b[t + 1], 0x5140);
}

// cp.async into shared memory, then a barrier after the wait: every thread reads its right neighbour's copy.
extern "C" __global__ void __launch_bounds__(128) cp_async_ok(const float* __restrict__ x, float* y) {
    __shared__ float s[128];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&s[t], x + blockIdx.x * 128 + t, sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    y[blockIdx.x * 128 + t] = s[(t + 1) % 128];
}

// The same with the wait after the barrier: a neighbour's copy may still be in flight when it is read.
extern "C" __global__ void __launch_bounds__(128) cp_async_wait_late(const float* __restrict__ x, float* y) {
    __shared__ float s[128];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&s[t], x + blockIdx.x * 128 + t, sizeof(float));
    __pipeline_commit();
    __syncthreads();
    __pipeline_wait_prior(0);
    y[blockIdx.x * 128 + t] = s[(t + 1) % 128];
}

// The wait lets one group stay in flight (__pipeline_wait_prior(1)): the lint cannot tell that it is this one.
extern "C" __global__ void __launch_bounds__(128) cp_async_wait_prior1(const float* __restrict__ x, float* y) {
    __shared__ float s[128];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&s[t], x + blockIdx.x * 128 + t, sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    y[blockIdx.x * 128 + t] = s[(t + 1) % 128];
}

extern "C" __global__ void __launch_bounds__(128) warp_collectives(const unsigned* __restrict__ x, unsigned* y) {
    const int t = blockIdx.x * 128 + threadIdx.x;
    const unsigned v = x[t];
    const unsigned sum = __reduce_add_sync(0xffffffffu, v);
    const unsigned peers = __match_any_sync(0xffffffffu, v);
    int pred;
    const unsigned all = __match_all_sync(0xffffffffu, v, &pred);
    const unsigned ballot = __ballot_sync(0xffffffffu, v > 3);
    const unsigned active = __activemask();
    unsigned leader = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("{\n\t.reg .pred P;\n\telect.sync _|P, 0xffffffff;\n\tselp.u32 %0, 1, 0, P;\n}" : "=r"(leader));
#endif
    y[t] = sum + peers + all + (unsigned)pred + ballot + active + leader;
}

// Programmatic dependent launch and a cluster of 2: each block reads its partner's shared value (DSMEM).
extern "C" __global__ void __launch_bounds__(128) cluster_dsmem(const float* __restrict__ x, float* y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ float part;
    cudaGridDependencySynchronize();
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) part = x[blockIdx.x];
    cluster.sync();
    const float other = *cluster.map_shared_rank(&part, cluster.block_rank() ^ 1);
    cluster.sync();
    if (threadIdx.x == 0) y[blockIdx.x] = part + other;
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// A store into another block's shared memory through a generic address (mapa): distributed shared memory,
// not global memory (the lint does not check it across blocks; it must not call it a global race either).
extern "C" __global__ void __launch_bounds__(128) cluster_dsmem_store(const float* __restrict__ x, float* y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ unsigned flag;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) flag = 0;
    cluster.sync();
    if (threadIdx.x == 0) *cluster.map_shared_rank(&flag, 0) = 1u;  // every block raises rank 0's flag
    cluster.sync();
    y[blockIdx.x * 128 + threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x] * (float)flag;
#endif
}
