"""Softmax ladder S1-S4 (softmax.cu): one block per row, fp32 math, I/O f32 / f16 / bf16.

S1 three passes over x, S2 online (m, s) pass + normalize, S3 row in registers, S4 S3 with 16-byte vectors.
Size-class tables here must match the macros at the end of softmax.cu.
"""
from verifier.errors import UsageError
from verifier.spec import CudaKernel, Expectations, Launch, dtypes, register_resident

THREADS = 256  # block size of S1, S2, S3 (kThreads in softmax.cu)
S3_CLASSES = (1024, 2048, 4096, 8192)  # N <= class; ELEMS per thread = class / THREADS
S4_CLASSES = (1024, 2048, 4096, 8192)
VEC_WIDTH = {"float32": 4, "float16": 8, "bfloat16": 8}  # elements per 16-byte vector
MAX_BUF, SUM_BUF = "tmp:max:M:float32", "tmp:sum:M:float32"
IO = [dtypes("f32"), dtypes("f16"), dtypes("bf16")]
_MULTIPASS = "use cuda-softmax-s2 or cuda-online-softmax-block, which take any N"


def size_class(N, classes):
    """Smallest class holding N; N above the largest is an error (never a partial row)."""
    for c in classes:
        if N <= c:
            return c
    raise UsageError(f"N={N} exceeds the register-resident limit {classes[-1]}", fix=_MULTIPASS)


def s4_threads(cls, dt):
    """Threads of an S4 block: THREADS, except 128 for the 1024 class of 8-wide (16-bit) vectors."""
    return min(THREADS, cls // VEC_WIDTH[dt.input])


def _s1(M, N, dt, params):
    t = dt.tag
    return [
        Launch(f"softmax_s1_max_{t}", grid=(M,), block=(THREADS,), args=("x", MAX_BUF, "M", "N")),
        Launch(f"softmax_s1_sum_{t}", grid=(M,), block=(THREADS,), args=("x", MAX_BUF, SUM_BUF, "M", "N")),
        Launch(f"softmax_norm_{t}", grid=(M,), block=(THREADS,), args=("x", MAX_BUF, SUM_BUF, "y", "M", "N")),
    ]


def _s2(M, N, dt, params):
    t = dt.tag
    return [
        Launch(f"softmax_s2_ms_{t}", grid=(M,), block=(THREADS,), args=("x", MAX_BUF, SUM_BUF, "M", "N")),
        Launch(f"softmax_norm_{t}", grid=(M,), block=(THREADS,), args=("x", MAX_BUF, SUM_BUF, "y", "M", "N")),
    ]


def _s3(M, N, dt, params):
    c = size_class(N, S3_CLASSES)
    return [Launch(f"softmax_s3_n{c}_{dt.tag}", grid=(M,), block=(THREADS,), args=("x", "y", "M", "N"))]


def _s4(M, N, dt, params):
    c = size_class(N, S4_CLASSES)
    return [Launch(f"softmax_s4_n{c}_{dt.tag}", grid=(M,), block=(s4_threads(c, dt),), args=("x", "y", "M", "N"))]


def _supports_s3(M, N, dt):
    if N > S3_CLASSES[-1]:
        return (f"N={N} exceeds the register-resident limit {S3_CLASSES[-1]} "
                f"(ELEMS_PER_THREAD*threads = {S3_CLASSES[-1] // THREADS}*{THREADS}); {_MULTIPASS}")
    return None


def _supports_s4(M, N, dt):
    w = VEC_WIDTH[dt.input]
    if N % w:
        return (f"N={N} is not a multiple of the {w}-element 16-byte vector of {dt.input}; "
                f"use cuda-softmax-s3 (scalar loads)")
    if N > S4_CLASSES[-1]:
        return f"N={N} exceeds the register-resident limit {S4_CLASSES[-1]}; {_MULTIPASS}"
    return None


KERNELS = [
    CudaKernel(name="cuda-softmax-s1", op="softmax", source="softmax.cu", dtypes=IO, launches=_s1,
               expectations=Expectations(deterministic=True), math_mode="precise",
               description="three kernels: row max, row sum of exp(x - max), normalize; reads x three times"),
    CudaKernel(name="cuda-softmax-s2", op="softmax", source="softmax.cu", dtypes=IO, launches=_s2,
               expectations=Expectations(deterministic=True), math_mode="precise",
               description="online (max, sum) pass with block merge, then normalize; reads x twice"),
    CudaKernel(name="cuda-softmax-s3", op="softmax", source="softmax.cu", dtypes=IO, launches=_s3,
               supports=_supports_s3, expectations=register_resident(), math_mode="precise",
               description="one pass, row in registers (size classes 1024..8192), block per row"),
    CudaKernel(name="cuda-softmax-s4", op="softmax", source="softmax.cu", dtypes=IO, launches=_s4,
               supports=_supports_s4, expectations=register_resident(), math_mode="precise",
               description="S3 with 16-byte vector loads/stores (f32 x4, f16/bf16 x8); needs N % width == 0"),
]
