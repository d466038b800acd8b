// Row sums by a whole grid of blocks working on one row at a time, joined by cooperative groups' grid sync (the
// shape of a split-row softmax for long vocabularies): each block sums a strided share of the row into
// partial[blockIdx.x]; after grid.sync() block 0 adds the partials. Needs a cooperative launch.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void coop_row_sum(const float* x, float* y, float* partial, int M, int N) {
  __shared__ float s[32];
  cg::grid_group grid = cg::this_grid();
  for (int row = 0; row < M; ++row) {
    float acc = 0.f;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < N; c += (long long)gridDim.x * blockDim.x)
      acc += x[(long long)row * N + c];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = 0.f;
      for (int w = 0; w < (int)blockDim.x / 32; ++w) t += s[w];
      partial[blockIdx.x] = t;
    }
    grid.sync();  // every block's partial written, and s free again
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      float t = 0.f;
      for (int b = 0; b < (int)gridDim.x; ++b) t += partial[b];
      y[row] = t;
    }
    grid.sync();  // partial read before the next row overwrites it
  }
}
