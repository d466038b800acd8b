// The kernel of crash_spec.py: stores through the pointer it is given (address 16 there: an illegal address).
extern "C" __global__ void bad(float* p) { p[threadIdx.x] = 1.0f; }
