// Row sums (reduce_sum: x[M, N] -> y[M]) whose row offsets are formed in several ways, for the offset-wrap check
// (tests/test_lint_offsets.py). *_bad: the offset wraps once M·N (or the row stride) passes 2^31 (2^32 unsigned);
// *_ok: the same kernels with the product in 64 bits, or offsets that cannot wrap.
#define T 256

__device__ __forceinline__ void row_sum(const float* __restrict__ r, float* __restrict__ y, long long row, int N) {
    __shared__ float s[T];
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) acc += r[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = s[0];
}

// `int base = blockIdx.x * N`: signed, wraps past 2^31 elements
extern "C" __global__ void int_offset_bad(const float* x, float* y, int M, int N) {
    const int base = blockIdx.x * N;
    row_sum(x + base, y, blockIdx.x, N);
}

// `unsigned base = blockIdx.x * N`: wraps past 2^32 elements
extern "C" __global__ void unsigned_offset_bad(const float* x, float* y, int M, int N) {
    const unsigned base = blockIdx.x * N;
    row_sum(x + base, y, blockIdx.x, N);
}

// a 64-bit stride narrowed to int before a 64-bit product: a stride of 2^31 or more wraps
extern "C" __global__ void int_stride_bad(const float* x, float* y, int M, int N, long long sx) {
    const int s = (int)sx;
    row_sum(x + (long long)blockIdx.x * s, y, blockIdx.x, N);
}

// a grid-stride loop over rows with the element index in int
extern "C" __global__ void grid_stride_bad(const float* x, float* y, int M, int N) {
    for (int row = blockIdx.x; row < M; row += gridDim.x) {
        float acc = 0.f;
        for (int i = threadIdx.x; i < N; i += blockDim.x) acc += x[row * N + i];
        atomicAdd(y + row, acc);
    }
}

// the same, correct: the product in 64 bits
extern "C" __global__ void int_offset_ok(const float* x, float* y, int M, int N) {
    row_sum(x + (long long)blockIdx.x * N, y, blockIdx.x, N);
}

extern "C" __global__ void size_t_offset_ok(const float* x, float* y, int M, int N) {
    row_sum(x + (size_t)blockIdx.x * (size_t)N, y, blockIdx.x, N);
}

extern "C" __global__ void stride_ok(const float* x, float* y, int M, int N, long long sx) {
    row_sum(x + (long long)blockIdx.x * sx, y, blockIdx.x, N);
}

extern "C" __global__ void grid_stride_ok(const float* x, float* y, int M, int N) {
    for (int row = blockIdx.x; row < M; row += gridDim.x) {
        float acc = 0.f;
        for (int i = threadIdx.x; i < N; i += blockDim.x) acc += x[(long long)row * N + i];
        atomicAdd(y + row, acc);
    }
}

// 32-bit products that stay small: the row's place within a block of 8 rows times N, and a chunk index times
// blockDim (the row base itself is 64-bit)
extern "C" __global__ void small_products_ok(const float* x, float* y, int M, int N) {
    const int sub = threadIdx.x / 32;  // one warp per row, 8 rows per block
    const long long row = (long long)blockIdx.x * 8 + sub;
    if (row >= M) return;
    const float* r = x + row * N;
    float acc = 0.f;
    for (int c = 0; c * 32 < N; ++c) {
        const int i = c * 32 + (threadIdx.x & 31);
        if (i < N) acc += r[sub * 0 + i];
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) y[row] = acc;
}

// regressions of false alarms met on bundled kernels: a row split over gridDim.y blocks whose column loop nvcc
// rotates and unrolls (the counter updated at three places; its bound is `hi`), an index masked with ~7, and an
// entry the launches use only for a few rows (never at a large shape)
extern "C" __global__ void split_columns_ok(const float* x, float* y, int M, int N) {
    const int chunk = (N + gridDim.y - 1) / gridDim.y;
    const int lo = blockIdx.y * chunk, hi = min(N, lo + chunk);
    const float* r = x + (long long)blockIdx.x * N;
    float acc = 0.f;
    for (int j = lo + threadIdx.x; j < hi; j += T) acc += r[j];
    atomicAdd(y + blockIdx.x, acc);
}

extern "C" __global__ void masked_index_ok(const float* x, float* y, int M, int N) {
    const float* r = x + (long long)blockIdx.x * N;
    float acc = 0.f;
    for (int i = threadIdx.x * 8; i < (N & ~7); i += T * 8) acc += r[(i + blockIdx.y * N) & ~7];
    atomicAdd(y + blockIdx.x, acc);
}

extern "C" __global__ void few_rows_int_offset(const float* x, float* y, int M, int N) {
    row_sum(x + blockIdx.x * N, y, blockIdx.x, N);  // launched for M <= 16 only: M·N stays far below 2^31
}

// the row length read from a struct passed by value (`.param .align 8 .b8 struct_rows_bad_param_0[24]`)
struct Rows { const float* x; float* y; int n; };
extern "C" __global__ void struct_rows_bad(Rows p) {
    row_sum(p.x + blockIdx.x * p.n, p.y, blockIdx.x, p.n);
}

// vLLM merge_attn_states' lse index: `head * tokens + token` with head = i % heads and token = i / heads of one
// unsigned index (nvcc: i - (i / heads) * heads): below heads * tokens, the lse's size, however many rows
extern "C" __global__ void modulo_index_ok(const float* x, float* y, unsigned tokens, unsigned heads, int N) {
    const unsigned i = blockIdx.x;
    const unsigned token = i / heads, head = i % heads;
    const float* r = x + (size_t)i * N;
    float acc = 0.f;
    for (int k = threadIdx.x; k < N; k += blockDim.x) acc += r[k];
    if (threadIdx.x == 0) y[head * tokens + token] = acc;  // one thread per row: the sum of its first lanes' part
}

// ggml's reduce_rows_f32: `x[row * ncols + i]`, i stepped inside an unrolled inner loop (no bound the check reads
// for it, only that it starts at threadIdx.x and grows): the product alone passes 2^31
extern "C" __global__ void unrolled_counter_bad(const float* x, float* y, int M, int N) {
    float part[8] = {0.f};
    for (int i = threadIdx.x; i < N;) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            part[j] += i < N ? x[blockIdx.x * N + i] : 0.f;
            i += blockDim.x;
        }
    }
    float acc = 0.f;
    for (int j = 0; j < 8; ++j) acc += part[j];
    if (threadIdx.x == 0) y[blockIdx.x] = acc;  // a per-thread partial: the lint case needs the load only
}

// llm.c's softmax_forward_online_kernel8: a warp per row, rows per block from `blockDim.x / warpSize` (PTX's
// WARP_SZ), `inp + row * C` in int
extern "C" __global__ void warp_rows_bad(const float* x, float* y, int M, int N) {
    const int row = blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize;
    if (row >= M) return;
    const float* r = x + row * N;
    float acc = 0.f;
    for (int i = threadIdx.x % warpSize; i < N; i += warpSize) acc += r[i];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % warpSize == 0) y[row] = acc;
}
