"""Quantizing reductions (quant.cu): per_token_quant, rmsnorm_quant, rmsnorm_dynamic_quant and fused_add_rmsnorm_quant
to fp8 e4m3 / e5m2 (satfinite, nearest-even)
and int8 (clamped, __float2int_rn), one block of 256 threads per row, the row in registers (1..32 elements per
thread, N <= 8192), x read once."""
from verifier.spec import (Contracts, CudaKernel, Launch, Scalar, SizeClasses, Stride, dtypes, register_resident,
                           whole_vectors)

THREADS = 256  # QT_THREADS in quant.cu
QUANT_IO = (dtypes("bf16", "e4m3"), dtypes("f16", "e4m3"), dtypes("bf16", "e5m2"), dtypes("bf16", "int8"),
            dtypes("f32", "int8"))
SX, SY = Stride("x", "int64"), Stride("y", "int64")
PTQ = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="per_token_quant_{tag}_e{c}")
RMSQ = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="rmsnorm_quant_{tag}_e{c}")
# f32 rows of 32 per thread spill 8 bytes here (ptxas, sm_90: the normalized row, its amax and the NaN flag live at
# once): f32 stops at 16 per thread (N <= 4096).
RDQ = SizeClasses({"f32": (1, 4, 8, 16), "f16": (1, 4, 8, 16, 32), "bf16": (1, 4, 8, 16, 32)}, threads=THREADS,
                  entry="rmsnorm_dynamic_quant_{tag}_e{c}")
FARQ = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="fused_add_rmsnorm_quant_{tag}_e{c}")


def _ptq(M, N, dt, params):
    return [Launch(PTQ.entry(N, dt), grid=(M,), block=(THREADS,), args=("x", "y", "scale", "M", "N", Scalar("float32", float(params["floor"])), SX, SY))]


def _rmsq(M, N, dt, params):
    return [Launch(RMSQ.entry(N, dt), grid=(M,), block=(THREADS,),
                   args=("x", "w", "scale", "y", "M", "N", "eps", SX, SY))]


def _rdq(M, N, dt, params):
    return [Launch(RDQ.entry(N, dt), grid=(M,), block=(THREADS,),
                   args=("x", "w", "y", "scale", "M", "N", "eps", Scalar("float32", float(params["floor"])), SX, SY))]


def _farq(M, N, dt, params):
    return [Launch(FARQ.entry(N, dt), grid=(M,), block=(THREADS,),
                   args=("x", "residual", "w", "scale", "y", "M", "N", "eps", SX, Stride("residual", "int64"), SY))]


# The vector kernels: 16-byte loads of x and w, VEC outputs stored at once; N a multiple of VEC, rows 16-byte aligned.
VCLASSES = {"f32": (4, 8, 16, 32), "f16": (8, 16, 32), "bf16": (8, 16, 32)}
# f32 at 32 per thread spills 24 bytes in the per-token kernel (ptxas, sm_90: the row, its amax and NaN flag live
# across the block reductions): f32 stops at 16 there (N <= 4096).
PTQ_V = SizeClasses({**VCLASSES, "f32": (4, 8, 16)}, threads=THREADS, entry="per_token_quant_v_{tag}_e{c}", instead="cuda-per-token-quant")
RMSQ_V = SizeClasses(VCLASSES, threads=THREADS, entry="rmsnorm_quant_v_{tag}_e{c}", instead="cuda-rmsnorm-quant")


def _ptq_v(M, N, dt, params):
    return [Launch(PTQ_V.entry(N, dt), grid=(M,), block=(THREADS,),
                   args=("x", "y", "scale", "M", "N", Scalar("float32", float(params["floor"])), SX, SY))]


def _rmsq_v(M, N, dt, params):
    return [Launch(RMSQ_V.entry(N, dt), grid=(M,), block=(THREADS,),
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
    CudaKernel(name="cuda-rmsnorm-dynamic-quant", op="rmsnorm_dynamic_quant", source="quant.cu", dtypes=QUANT_IO,
               launches=_rdq, sizes=RDQ, expectations=register_resident(),
               description="n = x * rstd * w in registers, block max of |n| (a NaN flag beside it), scale = "
                           "max(amax, floor) / qmax, n / scale converted as the others"),
    CudaKernel(name="cuda-fused-add-rmsnorm-quant", op="fused_add_rmsnorm_quant", source="quant.cu", dtypes=QUANT_IO,
               launches=_farq, sizes=FARQ, expectations=register_resident(),
               description="h = x + residual in fp32, stored rounded into residual; y quantizes the fp32 h's "
                           "x * rstd * w * (1 / scale)"),
    CudaKernel(name="cuda-per-token-quant-v", op="per_token_quant", source="quant.cu", dtypes=QUANT_IO,
               launches=_ptq_v, sizes=PTQ_V, supports=whole_vectors("cuda-per-token-quant"),
               expectations=register_resident(), contracts=Contracts(alignment=16),
               description="cuda-per-token-quant with 16-byte loads of x and VEC-byte stores of y (N % VEC == 0, "
                           "N <= 8192; 16-byte aligned rows, declared)"),
    CudaKernel(name="cuda-rmsnorm-quant-v", op="rmsnorm_quant", source="quant.cu", dtypes=QUANT_IO,
               launches=_rmsq_v, sizes=RMSQ_V, supports=whole_vectors("cuda-rmsnorm-quant"),
               expectations=register_resident(), contracts=Contracts(alignment=16),
               description="cuda-rmsnorm-quant with 16-byte loads of x and w and VEC-byte stores of y (N % VEC == 0, "
                           "N <= 8192; 16-byte aligned rows, declared)"),
]
