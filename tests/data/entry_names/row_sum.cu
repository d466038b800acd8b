// Row sums (op reduce_sum: y[m] = sum_n x[m, n]) declared the ways C++ libraries declare kernels: in an unnamed
// namespace, in nested namespaces, with type and int template arguments, and in an unnamed namespace inside a
// named one. tests/test_entry_names.py names each by its C++ name (verifier.launch.symbols).

template <typename T, int BLOCK>
__device__ void row_sum_body(const T* x, T* y, int N) {
  __shared__ float s[BLOCK];
  const T* row = x + (long long)blockIdx.x * N;
  float acc = 0.f;
  for (int i = threadIdx.x; i < N; i += BLOCK) acc += (float)row[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = BLOCK / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = (T)s[0];
}

namespace {
template <typename T>
__global__ void row_sum(const T* x, T* y, int N) { row_sum_body<T, 256>(x, y, N); }
template __global__ void row_sum<float>(const float*, float*, int);
}  // namespace

namespace outer { namespace inner {
template <typename T, int BLOCK>
__global__ void row_sum(const T* x, T* y, int N) { row_sum_body<T, BLOCK>(x, y, N); }
template __global__ void row_sum<float, 128>(const float*, float*, int);
}}  // namespace outer::inner

namespace lib { namespace {
template <typename T, unsigned BLOCK>
__global__ void row_sum(const T* x, T* y, int N) { row_sum_body<T, BLOCK>(x, y, N); }
template __global__ void row_sum<float, 64u>(const float*, float*, int);
template __global__ void row_sum<float, 32u>(const float*, float*, int);
}}  // namespace lib::(anonymous)
