"""LayerNorm (layernorm.cu): y = (x - mean) / sqrt(var + eps) * w + b, population variance, fp32 math."""
from verifier.spec import FLOAT_IO, CudaKernel, Launch, SizeClasses, register_resident

THREADS = 256  # LN_THREADS in layernorm.cu
ARGS = ("x", "w", "b", "y", "M", "N", "eps")


def _launch_tp(M, N, dt, params):
    return [Launch(entry=TP.entry(N, dt), grid=(M,), block=(THREADS,), args=ARGS)]


def _launch_welford(M, N, dt, params):
    return [Launch(entry=f"layernorm_welford_{dt.tag}", grid=(M,), block=(THREADS,), args=ARGS)]


# Elements per thread (LN_ALL in layernorm.cu): a class E holds rows of N <= E * THREADS.
TP = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="layernorm_tp_{tag}_e{c}", instead="cuda-layernorm-welford")

KERNELS = [
    CudaKernel(name="cuda-layernorm-twopass", op="layernorm", source="layernorm.cu", dtypes=FLOAT_IO,
               launches=_launch_tp, sizes=TP, expectations=register_resident(),
               description="row in registers; exact two-pass statistics: mean = sum/N, then var = sum((x-mean)^2)/N "
                           "(padding excluded); rstd = 1/sqrtf(var+eps), IEEE; N <= 8192 (1..32 elements/thread)."),
    CudaKernel(name="cuda-layernorm-welford", op="layernorm", source="layernorm.cu", dtypes=FLOAT_IO,
               launches=_launch_welford,
               description="any N: per-thread Welford (IEEE division), warp and block merge of (n, mean, M2) with "
                           "Chan's formula in a fixed order (empty partials are the identity), then x is re-read "
                           "to normalize; rstd = 1/sqrtf(M2/N + eps)."),
]
