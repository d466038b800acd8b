// Kernels whose `ptxas -v` report is captured as fixtures for tests/test_ptxas.py.
// Regenerate with tests/data/ptxas/capture.sh (the exact commands are there).
#ifndef BLOCK
#define BLOCK 256
#endif

// An entry per template instantiation: names are mangled with template arguments.
template <typename T, int VEC>
__global__ void scale_tpl(const T* __restrict__ x, T* __restrict__ y, T a, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
#pragma unroll
  for (int k = 0; k < VEC; ++k)
    if (i + k < n) y[i + k] = a * x[i + k];
}
template __global__ void scale_tpl<float, 4>(const float*, float*, float, int);
template __global__ void scale_tpl<double, 2>(const double*, double*, double, int);

// A device function ptxas keeps as a separate function: it gets its own
// "Function properties" block but no "Used N registers" line.
__device__ __noinline__ float helper_noinline(const float* p, int i) {
  return p[i] * p[i + 1] + 1.0f;
}

extern "C" __global__ void uses_helper(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n) y[i] = helper_noinline(x, i);
}

// Dynamic indexing of a large per-thread array under -maxrregcount=32: the array
// lives in local memory (stack frame) and the live values around it spill.
__global__ void spills(const float* x, float* y, const int* idx, int n) {
  float a[64];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 64; ++k) a[k] = x[t * 64 + k] * (k + 1);
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += a[idx[k] & 63] * a[(idx[k] + t) & 63];
  float s[24];
#pragma unroll
  for (int k = 0; k < 24; ++k) s[k] = x[t + k * n] * acc;
  float r = 0.f;
#pragma unroll
  for (int k = 0; k < 24; ++k) r += s[k] * s[23 - k] / (s[(k + 1) % 24] + 1.0f);
  y[t] = r + a[t & 63];
}

// Static shared memory and one barrier: a classic tree reduction.
__global__ void smem_reduce(const float* x, float* y, int n) {
  __shared__ float s[BLOCK];
  int t = threadIdx.x, i = blockIdx.x * BLOCK + t;
  s[t] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (int st = BLOCK / 2; st > 0; st >>= 1) {
    if (t < st) s[t] += s[t + st];
    __syncthreads();
  }
  if (t == 0) y[blockIdx.x] = s[0];
}
