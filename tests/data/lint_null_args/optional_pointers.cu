// Row sums (reduce_sum: x[M, N] -> y[M]) with an optional input passed as a pointer that may be null, as production
// kernels take bias / residual / scale tensors (tests/test_lint_null_args.py). Each defect sits only where the
// pointer is tested non-null: a launch passing null never runs it; a launch passing a tensor does.
#define T 256

__device__ __forceinline__ void block_sum(float acc, float* y) {
    __shared__ float s[T];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = T / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}

// `if (residual != nullptr)`: the residual row's offset is formed in 32 bits (wraps past 2^31 elements)
extern "C" __global__ void residual_offset(const float* x, float* y, const float* residual, int M, int N) {
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) {
        acc += x[row * N + i];
        if (residual != nullptr) acc += residual[blockIdx.x * N + i];
    }
    block_sum(acc, y);
}

// `if (bias)`: a shared-memory exchange without a barrier between the write and the neighbour's read
extern "C" __global__ void bias_race(const float* x, float* y, const float* bias, int M, int N) {
    __shared__ float t[T];
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) acc += x[row * N + i];
    if (bias) {
        t[threadIdx.x] = bias[threadIdx.x % N];
        acc += t[(threadIdx.x + 1) % T];  // written by the next thread, no __syncthreads() between
    }
    block_sum(acc, y);
}

// `weight == nullptr ? 1.f : weight[...]`: the weight's offset in 32 bits, under a select on the pointer
extern "C" __global__ void weight_select(const float* x, float* y, const float* weight, int M, int N) {
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) {
        const float w = weight == nullptr ? 1.f : weight[blockIdx.x * N + i];
        acc += x[row * N + i] * w;
    }
    block_sum(acc, y);
}

// `if (!scale) { plain sum; return; }`: the scaled path past the early return forms its offset in 32 bits
extern "C" __global__ void scale_early_return(const float* x, float* y, const float* scale, int M, int N) {
    const long long row = blockIdx.x;
    float acc = 0.f;
    if (!scale) {
        for (int i = threadIdx.x; i < N; i += T) acc += x[row * N + i];
        block_sum(acc, y);
        return;
    }
    for (int i = threadIdx.x; i < N; i += T) acc += x[blockIdx.x * N + i] * scale[i];
    block_sum(acc, y);
}

// the same defect under conditions that are not a pointer's nullness: they stay live whatever the launch passes
extern "C" __global__ void flag_offset(const float* x, float* y, const float* residual, int M, int N, int flag) {
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) {
        acc += x[row * N + i];
        if (flag != 0) acc += residual[blockIdx.x * N + i];
    }
    block_sum(acc, y);
}

extern "C" __global__ void alias_offset(const float* x, float* y, const float* residual, int M, int N) {
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) {
        acc += x[row * N + i];
        if (residual != x) acc += residual[blockIdx.x * N + i];
    }
    block_sum(acc, y);
}

// a guarded instruction rather than a branch (inline PTX `@p st.shared`, p = bias != 0): every thread stores its
// index into one slot (a WAW race) where bias is not null; the slot is read only there too
extern "C" __global__ void bias_predicated_store(const float* x, float* y, const float* bias, int M, int N) {
    __shared__ float t[1];
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) acc += x[row * N + i];
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u64 p, %0, 0;\n\t@p st.shared.f32 [%1], %2;\n\t}"
                 :: "l"(bias), "r"((unsigned)__cvta_generic_to_shared(t)), "f"((float)threadIdx.x) : "memory");
    __syncthreads();
    if (bias != nullptr) acc += t[0];
    block_sum(acc, y);
}

// two optional inputs: `if (bias && residual)` is dead where either is null; `if (bias || residual)` only where both are
extern "C" __global__ void both_offset(const float* x, float* y, const float* bias, const float* residual, int M,
                                       int N) {
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) acc += x[row * N + i];
    if (bias != nullptr && residual != nullptr) acc += bias[threadIdx.x] * residual[blockIdx.x * N + threadIdx.x];
    block_sum(acc, y);
}

extern "C" __global__ void either_offset(const float* x, float* y, const float* bias, const float* residual, int M,
                                         int N) {
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < N; i += T) acc += x[row * N + i];
    if (bias != nullptr || residual != nullptr) acc += x[blockIdx.x * N + threadIdx.x];
    block_sum(acc, y);
}

// the optional pointer as a member of a struct passed by value (FlashInfer's and TransformerEngine's params structs)
struct Params { const float* x; float* y; const float* residual; int M; int N; };
extern "C" __global__ void struct_residual(Params p) {
    const long long row = blockIdx.x;
    float acc = 0.f;
    for (int i = threadIdx.x; i < p.N; i += T) {
        acc += p.x[row * p.N + i];
        if (p.residual) acc += p.residual[blockIdx.x * p.N + i];
    }
    block_sum(acc, p.y);
}
