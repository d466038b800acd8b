"""CUDA kernels with output-memory defects (guard_defects.cu), for tests/test_launch_path_gpu.py: the one CUDA
launch path, on the harness's driver buffers, must find the out-of-range write, the unwritten element and the
crash, and report the crash as it does on torch tensors."""
from verifier.spec import CudaKernel, Launch, dtypes


def _one(entry):
    def launches(M, N, dt, params):
        return [Launch(entry=entry, grid=(M,), block=(256,), args=("x", "w", "y", "M", "N", "eps"))]
    return launches


KERNELS = [CudaKernel(name=f"gpu-rmsnorm-{what.replace('_', '-')}", op="rmsnorm", source="guard_defects.cu",
                      launches=_one(f"rms_{what}_f32"), dtypes=[dtypes("f32")], math_mode="precise",
                      description=desc)
           for what, desc in (("overrun", "stores one element past the end of y"),
                              ("skip_last", "never stores the last element of y"),
                              ("illegal", "stores through address 16"))]
