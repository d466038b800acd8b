"""kernels/cuda/masked_softmax.cu writing zeros on fully masked rows, declared three ways: zeros (passes), nan (a
nan-inf finding), undeclared (passes with a warning naming masked_rows). Used by tests/test_masked_softmax_gpu.py."""
from pathlib import Path

from verifier.spec import CudaKernel, Launch, Pointer, Scalar, Stride, dtypes

SOURCE = str(Path(__file__).resolve().parents[3] / "kernels" / "cuda" / "masked_softmax.cu")


def _launches(M, N, dt, p):
    args = ("x", "mask", Pointer(None), Pointer(None), "y", "M", "N", Stride("x", "int64"), Stride("mask", "int64"),
            Stride("y", "int64"), Scalar("float32", 0.125), Scalar("float32", 0.0), Scalar("int32", 1),
            Scalar("int32", 0), Scalar("int32", 0), Scalar("int32", 1))  # always zeros on a dead row
    return [Launch(f"masked_softmax_{dt.tag}", grid=(M,), block=(256,), args=args)]


KERNELS = [CudaKernel(name=f"zeros-declared-{tag}", op="softmax", source=SOURCE, dtypes=[dtypes("f32")],
                      launches=_launches, params={"scale": 0.125, "mask": "MxN", "causal": True, **extra})
           for tag, extra in (("zeros", {"masked_rows": "zeros"}), ("nan", {"masked_rows": "nan"}),
                              ("undeclared", {}))]
