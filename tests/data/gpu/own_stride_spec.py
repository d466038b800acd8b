"""A CUDA twin pair (own_stride.cu) for tests/test_cuda_own_stride_gpu.py: the strided case gives x and y each a
row stride of its own (verifier.inputs.layouts.row_pad), so the kernel storing y at x's stride fails there and its
twin, each tensor at its own stride, passes."""
from verifier.spec import CudaKernel, Launch, Stride, dtypes


def _one(entry):
    def launches(M, N, dt, params):
        return [Launch(entry=entry, grid=(M,), block=(256,),
                       args=("x", "w", "y", "N", Stride("x", "int64"), Stride("y", "int64"), "eps"))]
    return launches


KERNELS = [CudaKernel(name=f"gpu-rmsnorm-{what.replace('_', '-')}", op="rmsnorm", source="own_stride.cu",
                      launches=_one(f"rms_{what}_f32"), dtypes=[dtypes("f32")], math_mode="precise",
                      description=desc)
           for what, desc in (("own_stride", "x and y each at the row stride passed for it (twin)"),
                              ("y_at_x_stride", "stores y at x's row stride"))]
