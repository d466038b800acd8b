"""Fused residual add + RMSNorm (fused_add_rmsnorm.cu), as vLLM's fused_add_rms_norm."""
from verifier.spec import CudaKernel, Expectations, Launch, dtypes, register_resident

THREADS = 256  # FAR_THREADS in fused_add_rmsnorm.cu
IO = [dtypes("f32"), dtypes("f16"), dtypes("bf16")]
RR_CLASSES = (1, 4, 8, 16, 32)  # elements per thread instantiated in fused_add_rmsnorm.cu; keep in sync
ARGS = ("x", "residual", "w", "y", "M", "N", "eps")

_SEMANTICS = ("r = float(x) + float(residual) in fp32; residual <- round(r) to the residual dtype (in place); "
              "y = r * rstd * w with rstd = 1/sqrtf(mean(r^2) + eps) computed from the fp32 sum r, NOT from the "
              "rounded residual (as vLLM does). IEEE sqrt and division.")


def _size_class(N):
    return next((e for e in RR_CLASSES if e * THREADS >= N), None)


def _supports_rr(M, N, dt):
    if _size_class(N):
        return None
    return (f"N={N} exceeds the register-resident limit {RR_CLASSES[-1] * THREADS} "
            f"({RR_CLASSES[-1]} elements per thread x {THREADS} threads); use cuda-fused-add-rmsnorm-loop")


def _launch_rr(M, N, dt, params):
    return [Launch(entry=f"fused_add_rmsnorm_rr_{dt.tag}_e{_size_class(N)}", grid=(M,), block=(THREADS,), args=ARGS)]


def _launch_loop(M, N, dt, params):
    return [Launch(entry=f"fused_add_rmsnorm_loop_{dt.tag}", grid=(M,), block=(THREADS,), args=ARGS)]


KERNELS = [
    CudaKernel(name="cuda-fused-add-rmsnorm", op="fused_add_rmsnorm", source="fused_add_rmsnorm.cu", dtypes=IO,
               launches=_launch_rr, supports=_supports_rr, expectations=register_resident(), math_mode="precise",
               description="r held in registers (x, residual read once); N <= 8192. " + _SEMANTICS),
    CudaKernel(name="cuda-fused-add-rmsnorm-loop", op="fused_add_rmsnorm", source="fused_add_rmsnorm.cu", dtypes=IO,
               launches=_launch_loop, expectations=Expectations(), math_mode="precise",
               description="any N: pass 1 sums r^2 without writing, pass 2 recomputes r from the untouched x and "
                           "residual, then writes residual and y. " + _SEMANTICS),
]
