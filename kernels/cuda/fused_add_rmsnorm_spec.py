"""Fused residual add + RMSNorm (fused_add_rmsnorm.cu), as vLLM's fused_add_rms_norm."""
from verifier.spec import FLOAT_IO, CudaKernel, Launch, SizeClasses, Stride, register_resident

THREADS = 256  # FAR_THREADS in fused_add_rmsnorm.cu
# Row strides in elements (int64): views such as qkv[:, :N] are checked.
ARGS = ("x", "residual", "w", "y", "M", "N", "eps", Stride("x", "int64"), Stride("residual", "int64"),
        Stride("y", "int64"))

_SEMANTICS = ("r = float(x) + float(residual) in fp32; residual <- round(r) to the residual dtype (in place); "
              "y = r * rstd * w with rstd = 1/sqrtf(mean(r^2) + eps) computed from the fp32 sum r, NOT from the "
              "rounded residual (as vLLM does). IEEE sqrt and division.")


def _launch_rr(M, N, dt, params):
    return [Launch(entry=RR.entry(N, dt), grid=(M,), block=(THREADS,), args=ARGS)]


def _launch_loop(M, N, dt, params):
    return [Launch(entry=f"fused_add_rmsnorm_loop_{dt.tag}", grid=(M,), block=(THREADS,), args=ARGS)]


# Elements per thread (FAR_ALL in fused_add_rmsnorm.cu): a class E holds rows of N <= E * THREADS.
RR = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="fused_add_rmsnorm_rr_{tag}_e{c}",
                 instead="cuda-fused-add-rmsnorm-loop")

KERNELS = [
    CudaKernel(name="cuda-fused-add-rmsnorm", op="fused_add_rmsnorm", source="fused_add_rmsnorm.cu", dtypes=FLOAT_IO,
               launches=_launch_rr, sizes=RR, expectations=register_resident(),
               description="r held in registers (x, residual read once); N <= 8192. " + _SEMANTICS),
    CudaKernel(name="cuda-fused-add-rmsnorm-loop", op="fused_add_rmsnorm", source="fused_add_rmsnorm.cu",
               dtypes=FLOAT_IO, launches=_launch_loop,
               description="any N: pass 1 sums r^2 without writing, pass 2 recomputes r from the untouched x and "
                           "residual, then writes residual and y. " + _SEMANTICS),
]
