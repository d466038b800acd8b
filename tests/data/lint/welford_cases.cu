// Welford block merges for tests/test_lint_library.py (issue #35 item 12), 2-D blocks (32 x 8 or 32 x 16): each
// threadIdx.y row holds a partial (mean, m2, count) per column, and the rows are merged pairwise through shared
// memory, halving the active rows each step with a barrier after the upper half's store and after the lower
// half's merge. Correct whether the loop bound is a constant (const_ok) or blockDim.y (ntid_ok: a run-time bound
// the lint analyses per launched block shape). ntid_missing_barrier_bad drops the barrier after the merge: the
// next step's store into the slot of a row of the lower half races with that row's read of it (WAR).

struct Welford { float mean, m2, n; };

__device__ __forceinline__ Welford merge(Welford a, Welford b) {
    const float n = a.n + b.n;
    if (n == 0.f) return a;
    const float d = b.mean - a.mean, f = b.n / n;
    return {a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f, n};
}

template <int ROWS, bool SECOND_BARRIER>
__device__ __forceinline__ void welford_cols(const float* __restrict__ x, float* __restrict__ y, int M, int N) {
    __shared__ float s_mean[16][32], s_m2[16][32], s_n[16][32];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * blockDim.x + tx;
    Welford w{0.f, 0.f, 0.f};
    if (col < N)
        for (int r = ty; r < M; r += blockDim.y) w = merge(w, Welford{x[(size_t)r * N + col], 0.f, 1.f});
    const int rows = ROWS > 0 ? ROWS : (int)blockDim.y;
    for (int offset = rows / 2; offset > 0; offset /= 2) {
        if (ty >= offset && ty < 2 * offset) {
            s_mean[ty - offset][tx] = w.mean;
            s_m2[ty - offset][tx] = w.m2;
            s_n[ty - offset][tx] = w.n;
        }
        __syncthreads();
        if (ty < offset) w = merge(w, Welford{s_mean[ty][tx], s_m2[ty][tx], s_n[ty][tx]});
        if (SECOND_BARRIER) __syncthreads();
    }
    if (ty == 0 && col < N) {
        y[col] = w.mean;
        y[N + col] = w.m2 / w.n;
    }
}

extern "C" __global__ void const_ok(const float* x, float* y, int M, int N) { welford_cols<8, true>(x, y, M, N); }
extern "C" __global__ void ntid_ok(const float* x, float* y, int M, int N) { welford_cols<0, true>(x, y, M, N); }
extern "C" __global__ void ntid_missing_barrier_bad(const float* x, float* y, int M, int N) {
    welford_cols<0, false>(x, y, M, N);
}

// The same merge with one thread per row (threadIdx.x == 0) and the partials packed in one dynamic shared buffer:
// (mean, m2) pairs in the first blockDim.y floats, the counts after them (an offset known only at run time).
template <bool SECOND_BARRIER>
__device__ __forceinline__ void welford_rows(const float* __restrict__ x, float* __restrict__ y, int N) {
    extern __shared__ float buf[];
    float* pair = buf;
    float* count = buf + blockDim.y;
    const float* xr = x + (size_t)blockIdx.x * N;
    Welford w{0.f, 0.f, 0.f};
    for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < N; i += blockDim.x * blockDim.y)
        w = merge(w, Welford{xr[i], 0.f, 1.f});
    for (int o = 16; o > 0; o /= 2)
        w = merge(w, Welford{__shfl_xor_sync(0xffffffffu, w.mean, o), __shfl_xor_sync(0xffffffffu, w.m2, o),
                             __shfl_xor_sync(0xffffffffu, w.n, o)});
    for (int offset = blockDim.y / 2; offset > 0; offset /= 2) {
        if (threadIdx.x == 0 && threadIdx.y >= offset && threadIdx.y < 2 * offset) {
            const int at = threadIdx.y - offset;
            pair[2 * at] = w.mean;
            pair[2 * at + 1] = w.m2;
            count[at] = w.n;
        }
        __syncthreads();
        if (threadIdx.x == 0 && threadIdx.y < offset)
            w = merge(w, Welford{pair[2 * threadIdx.y], pair[2 * threadIdx.y + 1], count[threadIdx.y]});
        if (SECOND_BARRIER) __syncthreads();
    }
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        pair[0] = w.mean;
        pair[1] = w.m2;
    }
    __syncthreads();
    if (threadIdx.x == 0) y[(size_t)blockIdx.x * blockDim.y + threadIdx.y] = pair[0] + pair[1] / (float)N;
}

extern "C" __global__ void rows_ok(const float* x, float* y, int M, int N) { welford_rows<true>(x, y, N); }
extern "C" __global__ void rows_missing_barrier_bad(const float* x, float* y, int M, int N) {
    welford_rows<false>(x, y, N);
}
