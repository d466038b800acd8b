// One warp per row stages the row in dynamic shared memory with `for (i = lane; i < n; i += STEP)` and reads it
// back in a second such loop with no barrier between (ggml's cross_entropy_loss_f32 does so). nvcc splits each
// loop into a remainder loop and a 4x-unrolled one: the unrolled loop's counter starts from the join of the
// remainder loop's exit and the path that skipped it.
template <int STEP>
__device__ void stage(const float* x, float* y, int n) {
    extern __shared__ float tmp[];
    x += (long long)blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += STEP) tmp[i] = x[i] * (threadIdx.x + 1);
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += STEP) s += tmp[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if (threadIdx.x == 0) y[blockIdx.x] = s;
}
// each lane touches only its own elements: no barrier needed
extern "C" __global__ void stage_own(const float* x, float* y, int n) { stage<32>(x, y, n); }
// a step of 16 in a warp of 32: lane l + 16 writes the element lane l reads back
extern "C" __global__ void stage_shared(const float* x, float* y, int n) { stage<16>(x, y, n); }
