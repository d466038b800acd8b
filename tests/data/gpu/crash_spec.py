"""A kernel that faults (illegal address), for checking on a GPU that a crash in one pytest-xdist worker
leaves the other workers' results intact:

    pytest -n 2 suites/test_ops.py --verifier-specs tests/data/gpu/crash_spec.py --verifier-device cuda
"""
from verifier.spec import CallableKernel, dtypes

_KERNEL = None


def _fault(inputs, outputs, params, dt):
    global _KERNEL
    import cupy

    if _KERNEL is None:
        _KERNEL = cupy.RawKernel(r'extern "C" __global__ void bad(float* p) { p[threadIdx.x] = 1.0f; }', "bad")
    _KERNEL((1,), (32,), (cupy.uint64(16),))  # a store through address 16: illegal address
    cupy.cuda.runtime.deviceSynchronize()


KERNELS = [CallableKernel(name="gpu-crash-illegal-address", op="softmax", fn=_fault, dtypes=[dtypes("f32")],
                          device="cuda", description="writes through an invalid pointer")]
