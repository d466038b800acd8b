// Kernels whose parameters are every C-ABI launch argument kind (tests/test_launch_args.py): the build step
// checks a spec's arguments against these entries' PTX parameter lists, and `echo` writes every value it received
// into y, 32-bit word by word, for the GPU round trip.
#include <cstdint>

struct Div { unsigned d[3]; };                       // a fast-divmod uint3 pack
struct Inner { Div div; int8_t tag; };               // 16 bytes, aligned to 4
struct P { const float* x; float* y; unsigned n; float eps; };  // 24 bytes, aligned to 8
struct __align__(16) Echo {                          // 64 bytes, aligned to 16
  const float* x; const float* xoff; const float* null; Inner inner; double d; uint16_t h; uint64_t u;
};
struct __align__(16) A16 { float a; };               // 16 bytes, aligned to 16

// The issue's spelling: Struct([("ptr", "x"), ("ptr", "y"), ("uint32", N), ("float32", eps)]).
extern "C" __global__ void k(P p) {
  unsigned row = blockIdx.x;
  for (unsigned i = threadIdx.x; i < p.n; i += blockDim.x) p.y[row * p.n + i] = p.x[row * p.n + i] + p.eps;
}

extern "C" __global__ void scalars(bool b, int8_t i8, uint8_t u8, int16_t i16, uint16_t u16, int32_t i32,
                                   uint32_t u32, int64_t i64, uint64_t u64, float f32, double f64,
                                   const float* x, float* y) {
  if (b && threadIdx.x == 0) y[0] = x[0] + i8 + u8 + i16 + u16 + i32 + u32 + i64 + u64 + f32 + f64;
}

extern "C" __global__ void packs(const float* x, float* y, Div d, A16 a) {
  if (threadIdx.x == 0) y[0] = x[0] + d.d[0] + d.d[1] + d.d[2] + a.a;
}

// A stateless functor passed by value: an empty struct, one byte (.param .align 1 .b8 [1]).
struct Identity { __device__ float operator()(float v) const { return v; } };
template <typename F> __global__ void apply(const float* x, float* y, F f, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && n > 0) y[0] = f(x[0]);
}
template __global__ void apply<Identity>(const float*, float*, Identity, int);

// Eight parameters: a launch passing five is a build finding.
extern "C" __global__ void eight(const float* x, const float* w, float* y, int M, int N, int ldx, float eps,
                                 const float* bias) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && M > 0) y[0] = x[0] * w[0] + eps + ldx + N + (bias ? bias[0] : 0.f);
}

__device__ void put64(unsigned* w, int i, uint64_t v) { w[i] = (unsigned)v; w[i + 1] = (unsigned)(v >> 32); }

extern "C" __global__ void echo(Echo e, bool b, int8_t i8, uint8_t u8, int16_t i16, uint16_t u16, int32_t i32,
                                uint32_t u32, int64_t i64, uint64_t u64, float f32, double f64,
                                const float* xoff, const float* null, float* y) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned* w = reinterpret_cast<unsigned*>(y);
  w[0] = (unsigned)(e.xoff - e.x);
  w[1] = e.null == nullptr;
  w[2] = e.inner.div.d[0]; w[3] = e.inner.div.d[1]; w[4] = e.inner.div.d[2];
  w[5] = (unsigned)(int)e.inner.tag;
  put64(w, 6, (uint64_t)__double_as_longlong(e.d));
  w[8] = e.h;
  put64(w, 9, e.u);
  w[11] = b; w[12] = (unsigned)(int)i8; w[13] = u8; w[14] = (unsigned)(int)i16; w[15] = u16;
  w[16] = (unsigned)i32; w[17] = u32;
  put64(w, 18, (uint64_t)i64); put64(w, 20, u64);
  w[22] = __float_as_uint(f32);
  put64(w, 23, (uint64_t)__double_as_longlong(f64));
  w[25] = (unsigned)(xoff - e.x);
  w[26] = null == nullptr;
  w[27] = __float_as_uint(xoff[0]);
  w[28] = sizeof(Echo);
}
