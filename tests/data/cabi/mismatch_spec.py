"""A launch passing five arguments to ``eight`` (args.cu), which takes eight parameters: a build finding on any
machine (tests/test_launch_args.py)."""
from verifier.spec import CudaKernel, Launch, dtypes


def five(M, N, dt, params):
    return [Launch("eight", grid=(M,), block=(256,), args=("x", "w", "y", "M", "eps"))]


KERNELS = [CudaKernel(name="cabi-five-of-eight", op="rmsnorm", source="args.cu", launches=five, dtypes=[dtypes("f32")])]
