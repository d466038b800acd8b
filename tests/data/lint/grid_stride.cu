// Grid-stride row loops whose rows reuse one shared array with no barrier at a row's end: a block sum per row
// (4 warps fold their lanes, lane 0 of each stores its partial, thread 0 adds the 4 partials). Correct where the
// grid covers the rows (each block runs its loop once); where a block runs two rows, a warp's store of the next
// row's partial can land before thread 0 has read this row's (a WAR race across iterations).
template <bool SYNC>
__device__ void row_sum(const float* x, float* y, int rows, int n, int row) {
    __shared__ float partial[4];
    float v = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[(long long)row * n + i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
    if (SYNC) __syncthreads();  // without it thread 0 reads partials not yet stored (a race within one row)
    if (threadIdx.x == 0) y[row] = partial[0] + partial[1] + partial[2] + partial[3];
}

extern "C" __global__ void row_sums(const float* x, float* y, int rows, int n) {
    for (int row = blockIdx.x; row < rows; row += gridDim.x) row_sum<true>(x, y, rows, n, row);
}

extern "C" __global__ void row_sums_y(const float* x, float* y, int rows, int n) {  // rows over grid.y (<= 65535)
    for (int row = blockIdx.y; row < rows; row += gridDim.y) row_sum<true>(x, y, rows, n, row);
}

extern "C" __global__ void row_sums_unsynced(const float* x, float* y, int rows, int n) {
    for (int row = blockIdx.x; row < rows; row += gridDim.x) row_sum<false>(x, y, rows, n, row);
}

extern "C" __global__ void row_sums_counted(const float* x, float* y, const int* count, int n) {  // rows from memory
    const int rows = *count;
    for (int row = blockIdx.x; row < rows; row += gridDim.x) row_sum<true>(x, y, rows, n, row);
}

extern "C" __global__ void row_sums_wide(const float* x, float* y, long long rows, int n) {  // a 64-bit counter
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) row_sum<true>(x, y, (int)rows, n, (int)row);
}
