"""RMSNorm ladder (rmsnorm.cu): y = x / sqrt(mean(x^2) + eps) * w, fp32 math, f32/f16/bf16 I/O."""
from verifier.spec import CudaKernel, Expectations, Launch, dtypes, register_resident

THREADS = 256  # RMS_THREADS in rmsnorm.cu
IO = [dtypes("f32"), dtypes("f16"), dtypes("bf16")]
VEC = {"float32": 4, "float16": 8, "bfloat16": 8}  # elements per 16-byte load
# Elements per thread instantiated in rmsnorm.cu (RMS_ALL / RMS_N4); keep in sync.
N3_CLASSES = (1, 4, 8, 16, 32)
N4_CLASSES = {"float32": (4, 8, 16, 32), "float16": (8, 16, 32), "bfloat16": (8, 16, 32)}


def _size_class(N, classes):
    """Smallest elements-per-thread E with E * THREADS >= N, or None."""
    return next((e for e in classes if e * THREADS >= N), None)


def _too_long(N, classes, fallback):
    return (f"N={N} exceeds the register-resident limit {classes[-1] * THREADS} "
            f"({classes[-1]} elements per thread x {THREADS} threads); use {fallback}")


def _launch_n1(M, N, dt, params):
    return [
        Launch(entry=f"rmsnorm_n1_rstd_{dt.tag}", grid=(M,), block=(THREADS,),
               args=("x", "tmp:rstd:M:float32", "M", "N", "eps")),
        Launch(entry=f"rmsnorm_n1_norm_{dt.tag}", grid=(M,), block=(THREADS,),
               args=("x", "w", "tmp:rstd:M:float32", "y", "M", "N")),
    ]


def _launch_n2(M, N, dt, params):
    return [Launch(entry=f"rmsnorm_n2_{dt.tag}", grid=(M,), block=(THREADS,), args=("x", "w", "y", "M", "N", "eps"))]


def _supports_n3(M, N, dt):
    return None if _size_class(N, N3_CLASSES) else _too_long(N, N3_CLASSES, "cuda-rmsnorm-n2")


def _launch_n3(M, N, dt, params):
    e = _size_class(N, N3_CLASSES)
    return [Launch(entry=f"rmsnorm_n3_{dt.tag}_e{e}", grid=(M,), block=(THREADS,), args=("x", "w", "y", "M", "N", "eps"))]


def _supports_n4(M, N, dt):
    vec = VEC[dt.input]
    if N % vec:
        return f"N={N} is not a multiple of the 16-byte vector width {vec} for {dt.input}; use cuda-rmsnorm-n3"
    classes = N4_CLASSES[dt.input]
    return None if _size_class(N, classes) else _too_long(N, classes, "cuda-rmsnorm-n2")


def _launch_n4(M, N, dt, params):
    e = _size_class(N, N4_CLASSES[dt.input])
    return [Launch(entry=f"rmsnorm_n4_{dt.tag}_e{e}", grid=(M,), block=(THREADS,), args=("x", "w", "y", "M", "N", "eps"))]


_MATH = "rstd = 1/sqrtf(sumsq * (1/N) + eps) with IEEE sqrt and division (no rsqrtf); y = x * rstd * w in fp32"

KERNELS = [
    CudaKernel(name="cuda-rmsnorm-n1", op="rmsnorm", source="rmsnorm.cu", dtypes=IO, launches=_launch_n1,
               expectations=Expectations(), math_mode="precise",
               description="two kernels: rstd pass writes rstd[M] (fp32), normalize pass reads it; any N. " + _MATH),
    CudaKernel(name="cuda-rmsnorm-n2", op="rmsnorm", source="rmsnorm.cu", dtypes=IO, launches=_launch_n2,
               expectations=Expectations(), math_mode="precise",
               description="one kernel reading x twice (sum of squares, then normalize); any N. " + _MATH),
    CudaKernel(name="cuda-rmsnorm-n3", op="rmsnorm", source="rmsnorm.cu", dtypes=IO, launches=_launch_n3,
               supports=_supports_n3, expectations=register_resident(), math_mode="precise",
               description="row held in registers, x read once; size classes of 1..32 elements per thread "
                           "x 256 threads (N <= 8192). " + _MATH),
    CudaKernel(name="cuda-rmsnorm-n4", op="rmsnorm", source="rmsnorm.cu", dtypes=IO, launches=_launch_n4,
               supports=_supports_n4, expectations=register_resident(), math_mode="precise",
               description="n3 with 16-byte vector loads/stores of x, w, y (N % (16/sizeof(T)) == 0, N <= 8192). "
                           + _MATH),
]
