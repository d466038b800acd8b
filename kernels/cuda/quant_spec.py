"""Quantizing reductions (quant.cu): per_token_quant and rmsnorm_quant to fp8 e4m3 / e5m2 (satfinite, nearest-even)
and int8 (clamped, __float2int_rn), one block of 256 threads per row, the row in registers (1..32 elements per
thread, N <= 8192), x read once."""
from verifier.spec import CudaKernel, Launch, Scalar, SizeClasses, Stride, dtypes, register_resident

THREADS = 256  # QT_THREADS in quant.cu
QUANT_IO = (dtypes("bf16", "e4m3"), dtypes("f16", "e4m3"), dtypes("bf16", "e5m2"), dtypes("bf16", "int8"),
            dtypes("f32", "int8"))
SX, SY = Stride("x", "int64"), Stride("y", "int64")
PTQ = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="per_token_quant_{tag}_e{c}")
RMSQ = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="rmsnorm_quant_{tag}_e{c}")


def _ptq(M, N, dt, params):
    return [Launch(PTQ.entry(N, dt), grid=(M,), block=(THREADS,), args=("x", "y", "scale", "M", "N", Scalar("float32", float(params["floor"])), SX, SY))]


def _rmsq(M, N, dt, params):
    return [Launch(RMSQ.entry(N, dt), grid=(M,), block=(THREADS,),
                   args=("x", "w", "scale", "y", "M", "N", "eps", SX, SY))]


KERNELS = [
    CudaKernel(name="cuda-per-token-quant", op="per_token_quant", source="quant.cu", dtypes=QUANT_IO, launches=_ptq,
               sizes=PTQ, expectations=register_resident(),
               description="block max of |x| (a NaN flag beside it), scale = max(amax, floor) / qmax with IEEE "
                           "division, x / scale converted satfinite (fp8) or clamped and rounded to nearest-even"),
    CudaKernel(name="cuda-rmsnorm-quant", op="rmsnorm_quant", source="quant.cu", dtypes=QUANT_IO, launches=_rmsq,
               sizes=RMSQ, expectations=register_resident(),
               description="rstd = 1 / sqrtf(sum(x^2) / N + eps), x * rstd * w * (1 / scale) converted satfinite "
                           "(fp8) or clamped and rounded to nearest-even (int8)"),
]
