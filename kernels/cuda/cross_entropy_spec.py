"""Cross entropy (cross_entropy.cu): one block of 256 threads per row, online max/sum, any vocabulary size.

Entries cross_entropy_<dtype tag>_<i64|i32>: logits in f32 / f16 / bf16, the loss in float32, labels
int64 (the op's default) or int32 (params label_dtype='int32').
"""
from verifier.spec import FLOAT_IO, CudaKernel, Launch, Scalar, Stride, dtypes

THREADS = 256  # kCeThreads in cross_entropy.cu
_LTAG = {"int64": "i64", "int32": "i32"}


def _launches(M, N, dt, params):
    entry = f"cross_entropy_{dt.tag}_{_LTAG[params['label_dtype']]}"
    return [Launch(entry, grid=(M,), block=(THREADS,),
                   args=("x", "labels", "loss", "M", "N", Scalar("int64", params["ignore_index"]),
                         Stride("x", "int64")))]  # the logits' row stride: views such as h[:, :V] are checked


KERNELS = [
    CudaKernel(name=f"cuda-cross-entropy{suffix}", op="cross_entropy", source="cross_entropy.cu", launches=_launches,
               dtypes=[dtypes(d.input, "f32") for d in FLOAT_IO], params={"label_dtype": label}, online=True,
               description=f"one block per row, per-thread online (max, sum), block merge, {label} labels")
    for suffix, label in (("", "int64"), ("-i32", "int32"))
]
