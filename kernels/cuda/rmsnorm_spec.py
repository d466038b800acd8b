"""RMSNorm ladder (rmsnorm.cu): y = x / sqrt(mean(x^2) + eps) * w, fp32 math, f32/f16/bf16 I/O."""
from verifier.spec import (FLOAT_IO, Contracts, CudaKernel, Launch, SizeClasses, Stride, Workspace, register_resident,
                           whole_vectors)

THREADS = 256  # RMS_THREADS in rmsnorm.cu
SX, SY = Stride("x", "int64"), Stride("y", "int64")  # row strides in elements: views such as qkv[:, :N] are checked
ARGS = ("x", "w", "y", "M", "N", "eps", SX, SY)
RSTD = Workspace("rstd", lambda M, N: M)  # fp32 rstd per row, written by n1's first pass
_MATH = "rstd = 1/sqrtf(sumsq * (1/N) + eps) with IEEE sqrt and division (no rsqrtf); y = x * rstd * w in fp32"


def _launch_n1(M, N, dt, params):
    return [
        Launch(entry=f"rmsnorm_n1_rstd_{dt.tag}", grid=(M,), block=(THREADS,), args=("x", RSTD, "M", "N", "eps", SX)),
        Launch(entry=f"rmsnorm_n1_norm_{dt.tag}", grid=(M,), block=(THREADS,),
               args=("x", "w", RSTD, "y", "M", "N", SX, SY)),
    ]


def _launch_n2(M, N, dt, params):
    return [Launch(entry=f"rmsnorm_n2_{dt.tag}", grid=(M,), block=(THREADS,), args=ARGS)]


def _launch_sized(sizes):
    return lambda M, N, dt, params: [Launch(entry=sizes.entry(N, dt), grid=(M,), block=(THREADS,), args=ARGS)]


# Elements per thread (RMS_ALL / RMS_N4 in rmsnorm.cu): a class E holds rows of N <= E * THREADS.
N3 = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="rmsnorm_n3_{tag}_e{c}", instead="cuda-rmsnorm-n2")
N4 = SizeClasses({"f32": (4, 8, 16, 32), "f16": (8, 16, 32), "bf16": (8, 16, 32)}, threads=THREADS,
                 entry="rmsnorm_n4_{tag}_e{c}", instead="cuda-rmsnorm-n2")

KERNELS = [
    CudaKernel(name="cuda-rmsnorm-n1", op="rmsnorm", source="rmsnorm.cu", dtypes=FLOAT_IO, launches=_launch_n1,
               description="two kernels: rstd pass writes rstd[M] (fp32), normalize pass reads it; any N. " + _MATH),
    CudaKernel(name="cuda-rmsnorm-n2", op="rmsnorm", source="rmsnorm.cu", dtypes=FLOAT_IO, launches=_launch_n2,
               description="one kernel reading x twice (sum of squares, then normalize); any N. " + _MATH),
    CudaKernel(name="cuda-rmsnorm-n3", op="rmsnorm", source="rmsnorm.cu", dtypes=FLOAT_IO, launches=_launch_sized(N3),
               sizes=N3, expectations=register_resident(),
               description="row held in registers, x read once; size classes of 1..32 elements per thread "
                           "x 256 threads (N <= 8192). " + _MATH),
    CudaKernel(name="cuda-rmsnorm-n4", op="rmsnorm", source="rmsnorm.cu", dtypes=FLOAT_IO, launches=_launch_sized(N4),
               sizes=N4, supports=whole_vectors("cuda-rmsnorm-n3"), expectations=register_resident(),
               contracts=Contracts(alignment=16),
               description="n3 with 16-byte vector loads/stores of x, w, y (N % (16/sizeof(T)) == 0, N <= 8192; "
                           "every row 16-byte aligned, declared). " + _MATH),
]
