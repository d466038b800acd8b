"""A CUDA kernel that zeroes its input (clobber.cu), for tests/test_inputs_unchanged.py: on a GPU the input-clobbered
check reads the driver buffers back; declared ``scratch_inputs=("x",)`` the same kernel passes."""
from verifier.spec import CudaKernel, Launch, dtypes


def _launches(M, N, dt, params):
    return [Launch(entry="rms_zeroes_x_f32", grid=(M,), block=(256,), args=("x", "w", "y", "M", "N", "eps"))]


KERNELS = [CudaKernel(name=name, op="rmsnorm", source="clobber.cu", launches=_launches, dtypes=[dtypes("f32")],
                      math_mode="precise", **extra)
           for name, extra in (("gpu-rmsnorm-zeroes-x", {}), ("gpu-rmsnorm-x-scratch", {"scratch_inputs": ("x",)}))]
