"""LayerNorm (layernorm.cu): y = (x - mean) / sqrt(var + eps) * w + b, population variance, fp32 math."""
from verifier.spec import CudaKernel, Expectations, Launch, dtypes, register_resident

THREADS = 256  # LN_THREADS in layernorm.cu
IO = [dtypes("f32"), dtypes("f16"), dtypes("bf16")]
TP_CLASSES = (1, 4, 8, 16, 32)  # elements per thread instantiated in layernorm.cu (LN_ALL); keep in sync
ARGS = ("x", "w", "b", "y", "M", "N", "eps")


def _size_class(N):
    return next((e for e in TP_CLASSES if e * THREADS >= N), None)


def _supports_tp(M, N, dt):
    if _size_class(N):
        return None
    return (f"N={N} exceeds the register-resident limit {TP_CLASSES[-1] * THREADS} "
            f"({TP_CLASSES[-1]} elements per thread x {THREADS} threads); use cuda-layernorm-welford")


def _launch_tp(M, N, dt, params):
    return [Launch(entry=f"layernorm_tp_{dt.tag}_e{_size_class(N)}", grid=(M,), block=(THREADS,), args=ARGS)]


def _launch_welford(M, N, dt, params):
    return [Launch(entry=f"layernorm_welford_{dt.tag}", grid=(M,), block=(THREADS,), args=ARGS)]


KERNELS = [
    CudaKernel(name="cuda-layernorm-twopass", op="layernorm", source="layernorm.cu", dtypes=IO, launches=_launch_tp,
               supports=_supports_tp, expectations=register_resident(), math_mode="precise",
               description="row in registers; exact two-pass statistics: mean = sum/N, then var = sum((x-mean)^2)/N "
                           "(padding excluded); rstd = 1/sqrtf(var+eps), IEEE; N <= 8192 (1..32 elements/thread)."),
    CudaKernel(name="cuda-layernorm-welford", op="layernorm", source="layernorm.cu", dtypes=IO,
               launches=_launch_welford, expectations=Expectations(), math_mode="precise",
               description="any N: per-thread Welford (IEEE division), warp and block merge of (n, mean, M2) with "
                           "Chan's formula in a fixed order (empty partials are the identity), then x is re-read "
                           "to normalize; rstd = 1/sqrtf(M2/N + eps)."),
]
