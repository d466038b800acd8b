// One row per block; the host picks the entry by the row count or the tensor's size (ONNX Runtime's softmax takes
// another kernel from 8192 rows; libraries switch to a 64-bit-index variant past 2^31 elements). Each racy entry
// reads its neighbour's slot with no barrier after the stores.
template <bool RACY>
__device__ void rows(const float* __restrict__ x, float* y, int n) {
    __shared__ float s[256];
    const long long row = (long long)blockIdx.x * n;
    s[threadIdx.x] = threadIdx.x < n ? x[row + threadIdx.x] : 0.f;
    __syncthreads();
    const float v = s[(threadIdx.x + 1) % blockDim.x];
    if (RACY) s[threadIdx.x] = 2.f * v;  // overwrites a slot its neighbour may not have read yet
    if (threadIdx.x < n) y[row + threadIdx.x] = v;
}
extern "C" __global__ void rows_few(const float* x, float* y, int n) { rows<false>(x, y, n); }
extern "C" __global__ void rows_many_race(const float* x, float* y, int n) { rows<true>(x, y, n); }
extern "C" __global__ void rows_huge_race(const float* x, float* y, int n) { rows<true>(x, y, n); }
