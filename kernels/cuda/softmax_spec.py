"""Softmax ladder S1-S4 (softmax.cu): one block per row, fp32 math, I/O f32 / f16 / bf16.

S1 three passes over x, S2 online (m, s) pass + normalize, S3 row in registers, S4 S3 with 16-byte vectors.
"""
from verifier.spec import (FLOAT_IO, Contracts, CudaKernel, Launch, SizeClasses, Stride, Workspace, register_resident,
                           vector_width, whole_vectors)

THREADS = 256  # block size of S1, S2, S3 (kThreads in softmax.cu)
SX, SY = Stride("x", "int64"), Stride("y", "int64")  # row strides in elements: views such as qkv[:, :N] are checked
MAX, SUM = Workspace("max", lambda M, N: M), Workspace("sum", lambda M, N: M)  # per-row statistics
_MULTIPASS = "cuda-softmax-s2 or cuda-online-softmax-block, which take any N"


def _s1(M, N, dt, params):
    t = dt.tag
    return [
        Launch(f"softmax_s1_max_{t}", grid=(M,), block=(THREADS,), args=("x", MAX, "M", "N", SX)),
        Launch(f"softmax_s1_sum_{t}", grid=(M,), block=(THREADS,), args=("x", MAX, SUM, "M", "N", SX)),
        Launch(f"softmax_norm_{t}", grid=(M,), block=(THREADS,), args=("x", MAX, SUM, "y", "M", "N", SX, SY)),
    ]


def _s2(M, N, dt, params):
    t = dt.tag
    return [
        Launch(f"softmax_s2_ms_{t}", grid=(M,), block=(THREADS,), args=("x", MAX, SUM, "M", "N", SX)),
        Launch(f"softmax_norm_{t}", grid=(M,), block=(THREADS,), args=("x", MAX, SUM, "y", "M", "N", SX, SY)),
    ]


def _s3(M, N, dt, params):
    return [Launch(S3.entry(N, dt), grid=(M,), block=(THREADS,), args=("x", "y", "M", "N", SX, SY))]


def _s4(M, N, dt, params):
    threads = min(THREADS, S4.of(N, dt) // vector_width(dt))  # 128 for the 1024 class of 8-wide vectors
    return [Launch(S4.entry(N, dt), grid=(M,), block=(threads,), args=("x", "y", "M", "N", SX, SY))]


S3 = SizeClasses((1024, 2048, 4096, 8192), entry="softmax_s3_n{c}_{tag}", instead=_MULTIPASS)
S4 = SizeClasses((1024, 2048, 4096, 8192), entry="softmax_s4_n{c}_{tag}", instead=_MULTIPASS)

KERNELS = [
    CudaKernel(name="cuda-softmax-s1", op="softmax", source="softmax.cu", dtypes=FLOAT_IO, launches=_s1,
               description="three kernels: row max, row sum of exp(x - max), normalize; reads x three times"),
    CudaKernel(name="cuda-softmax-s2", op="softmax", source="softmax.cu", dtypes=FLOAT_IO, launches=_s2,
               description="online (max, sum) pass with block merge, then normalize; reads x twice"),
    CudaKernel(name="cuda-softmax-s3", op="softmax", source="softmax.cu", dtypes=FLOAT_IO, launches=_s3, sizes=S3,
               expectations=register_resident(),
               description="one pass, row in registers (size classes 1024..8192), block per row"),
    CudaKernel(name="cuda-softmax-s4", op="softmax", source="softmax.cu", dtypes=FLOAT_IO, launches=_s4, sizes=S4,
               supports=whole_vectors("cuda-softmax-s3 (scalar loads)"), expectations=register_resident(),
               contracts=Contracts(alignment=16),
               description="S3 with 16-byte vector loads/stores (f32 x4, f16/bf16 x8); needs N % width == 0 and "
                           "16-byte aligned rows (declared)"),
]
