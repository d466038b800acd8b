"""LayerNorm (layernorm.cu): y = (x - mean) / sqrt(var + eps) * w + b, population variance, fp32 math."""
from verifier.spec import FLOAT_IO, CudaKernel, Launch, SizeClasses, register_resident, whole_vectors

THREADS = 256  # LN_THREADS in layernorm.cu
ARGS = ("x", "w", "b", "y", "M", "N", "eps")


def _launch_tp(M, N, dt, params):
    return [Launch(entry=TP.entry(N, dt), grid=(M,), block=(THREADS,), args=ARGS)]


def _launch_welford(M, N, dt, params):
    return [Launch(entry=f"layernorm_welford_{dt.tag}", grid=(M,), block=(THREADS,), args=ARGS)]


def _launch_rows(M, N, dt, params):
    tpr = ROWS.of(N, dt).threads
    rows = max(1, ROWS_BLOCK // tpr)
    return [Launch(entry=ROWS.entry(N, dt), grid=(-(-M // rows),), block=(tpr * rows,), args=ARGS)]


# Elements per thread (LN_ALL in layernorm.cu): a class E holds rows of N <= E * THREADS.
TP = SizeClasses((1, 4, 8, 16, 32), threads=THREADS, entry="layernorm_tp_{tag}_e{c}", instead="cuda-layernorm-welford")
# rows: (threads per row, 16-byte vectors per thread), LN_ROWS_16 / LN_ROWS_32 in layernorm.cu; a row of fewer
# threads than ROWS_BLOCK shares its block with ROWS_BLOCK // threads others.
ROWS_BLOCK = 256  # kvrows::kBlock in rows.cuh
ROWS_16 = ((32, 1), (32, 2), (32, 4), (32, 8), (64, 8), (128, 8), (256, 8), (512, 8))
ROWS_32 = ((32, 1), (32, 2), (32, 4), (64, 4), (64, 8), (128, 8), (256, 8), (512, 8))
ROWS = SizeClasses({"f32": ROWS_32, "f16": ROWS_16, "bf16": ROWS_16}, entry="layernorm_rows_{c}_{tag}",
                   instead="cuda-layernorm-welford")

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
    CudaKernel(name="cuda-layernorm-rows", op="layernorm", source="layernorm.cu", dtypes=FLOAT_IO,
               launches=_launch_rows, sizes=ROWS, supports=whole_vectors("cuda-layernorm-twopass"),
               expectations=register_resident(),
               description="row in registers as 16-byte vectors, threads per row sized to N (a warp up to 2048 "
                           "16-bit columns, several rows per block), loads all in flight first; the two-pass "
                           "statistics of twopass; N % width == 0, N <= 32768 (16-bit) / 16384 (f32)"),
]
