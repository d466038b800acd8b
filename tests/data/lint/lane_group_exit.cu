// Full-mask shuffles after a thread-dependent exit, for tests/test_lint_lane_groups.py. Each group of 4 lanes
// sums one row of n <= 4 values; a block of 32 threads has 8 groups. Groups past the last row leave the kernel.
// *_ok: the lanes that leave never shuffle again and no lane reads across its group (PTX shfl.sync waits only for
// non-exited lanes): clean. *_bad: an inactive-lanes error.
#define LOAD(row) (threadIdx.x % 4 < n ? x[(row) * n + threadIdx.x % 4] : 0.f)

extern "C" __global__ void group_return_ok(const float* x, float* y, long rows, int n) {
    long row = blockIdx.x * 8 + threadIdx.x / 4;
    if (row >= rows) return;
    float v = LOAD(row);
    for (int m = 2; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
    if (threadIdx.x % 4 == 0) y[row] = v;
}

// OneFlow SoftmaxWarpImpl's shape: a grid-stride loop over rows, one row per group, the shuffle inside.
extern "C" __global__ void group_stride_loop_ok(const float* x, float* y, long rows, int n) {
    for (long row = blockIdx.x * 8 + threadIdx.x / 4; row < rows; row += gridDim.x * 8) {
        float v = LOAD(row);
        for (int m = 2; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
        if (threadIdx.x % 4 == 0) y[row] = v;
    }
}

// xor 4 reads the neighbouring group, which may have left: an undefined value reaches y.
extern "C" __global__ void cross_group_bad(const float* x, float* y, long rows, int n) {
    long row = blockIdx.x * 8 + threadIdx.x / 4;
    if (row >= rows) return;
    float v = LOAD(row);
    for (int m = 4; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
    if (threadIdx.x % 4 == 0) y[row] = v;
}

// The lanes past the row end do not leave: they meet another full-mask shuffle (a different one).
extern "C" __global__ void other_side_shuffles_bad(const float* x, float* y, long rows, int n) {
    long row = blockIdx.x * 8 + threadIdx.x / 4;
    float v = 0.f;
    if (row < rows) {
        v = LOAD(row);
        for (int m = 2; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
    } else {
        v = __shfl_xor_sync(0xffffffffu, v, 1);
    }
    if (row < rows && threadIdx.x % 4 == 0) y[row] = v;
}

// One row per thread, guarded per lane: a lane's neighbours may have left.
extern "C" __global__ void per_lane_guard_bad(const float* x, float* y, long rows, int n) {
    long row = blockIdx.x * 32 + threadIdx.x;
    if (row >= rows) return;
    float v = x[row * n];
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    y[row] = v;
}

// lmdeploy QkRMSNorm's shape: 16 lanes per row, the group index from the block's offset (a multiple of 16 whose
// sign the lint cannot tell: blockIdx.x minus an argument) plus threadIdx.x, divided by 16.
extern "C" __global__ void group16_block_offset_ok(const float* x, float* y, long rows, int n, int first_block) {
    const bool second = blockIdx.x >= first_block;
    const int block_idx = second ? blockIdx.x - first_block : blockIdx.x;
    const int row = (threadIdx.x + block_idx * blockDim.x) / 16;
    if (row >= rows) return;
    float v = threadIdx.x % 16 < n ? x[(long)row * n + threadIdx.x % 16] : 0.f;
    for (int m = 8; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
    if (threadIdx.x % 16 == 0) y[row] = v;
}

// The same with the groups shifted by 8 lanes: xor 8 reads a lane of another row, which may have left.
extern "C" __global__ void group16_misaligned_bad(const float* x, float* y, long rows, int n, int first_block) {
    const bool second = blockIdx.x >= first_block;
    const int block_idx = second ? blockIdx.x - first_block : blockIdx.x;
    const int row = (threadIdx.x + 8 + block_idx * blockDim.x) / 16;
    if (row >= rows) return;
    float v = threadIdx.x % 16 < n ? x[(long)row * n + threadIdx.x % 16] : 0.f;
    for (int m = 8; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
    if (threadIdx.x % 16 == 0) y[row] = v;
}
