"""LayerNorm, rows rung (layernorm_rows.cu): the row in registers as 16-byte vectors over as many threads as it needs
(a warp for short rows, several rows per 256-thread block), all loads in flight first; the two-pass statistics and
output formula of cuda-layernorm-twopass. y = (x - mean) / sqrt(var + eps) * w + b, population variance, fp32 math.

The size classes are LN_ROWS_16 / LN_ROWS_32 at the end of layernorm_rows.cu (the build step reports a class whose
entry the .cu lacks), picked by benchmarks/layernorm_tune.py on the H200 (docs/benchmarks.md).
"""
from verifier.spec import (FLOAT_IO, Contracts, CudaKernel, Launch, SizeClasses, Stride, register_resident,
                           whole_vectors)

BLOCK = 256  # kvrows::kBlock in rows.cuh: a row of fewer threads shares its block with BLOCK // threads others
ARGS = ("x", "w", "b", "y", "M", "N", "eps", Stride("x", "int64"), Stride("y", "int64"))  # row strides: views checked
# (threads per row, 16-byte vectors per thread), smallest first: a class holds rows of N <= threads x vectors x width.
# (threads, vectors, min blocks per SM) where the entry asks ptxas for a minimum.
ROWS_16 = ((32, 1), (32, 2), (32, 4), (128, 2), (128, 4), (256, 4, 3), (256, 8), (512, 8))
ROWS_32 = ((32, 1), (32, 2), (32, 4), (64, 4), (128, 4), (256, 4, 3), (256, 8), (512, 8))
ROWS = SizeClasses({"f32": ROWS_32, "f16": ROWS_16, "bf16": ROWS_16}, entry="layernorm_rows_{c}_{tag}",
                   instead="cuda-layernorm-welford")


# Strided classes (ln_rows_p): a block takes GROUPS_PER_BLOCK groups of rows, loading the next group while it
# reduces the current one: at 8192 x 2048 in 16 bits, 512 blocks, about 4 per SM of the H200 (all resident).
STRIDED = {"f16": {(128, 2)}, "bf16": {(128, 2)}}
GROUPS_PER_BLOCK = 8


def _launch(M, N, dt, params):
    c = ROWS.of(N, dt)
    rows = max(1, BLOCK // c.threads)
    groups = -(-M // rows)
    if (c.threads, c.vectors) in STRIDED.get(dt.tag, ()):
        groups = -(-groups // GROUPS_PER_BLOCK)
    return [Launch(entry=ROWS.entry(N, dt), grid=(groups,), block=(c.threads * rows,), args=ARGS)]


KERNELS = [
    CudaKernel(name="cuda-layernorm-rows", op="layernorm", source="layernorm_rows.cu", dtypes=FLOAT_IO,
               launches=_launch, sizes=ROWS, supports=whole_vectors("cuda-layernorm-twopass"),
               expectations=register_resident(), contracts=Contracts(alignment=16),  # 16-byte vector loads
               description="row in registers as 16-byte vectors, threads per row sized to N (a warp up to 1024 "
                           "16-bit columns, several rows per block), loads all in flight first; the two-pass "
                           "statistics of twopass; N % width == 0, N <= 32768 (16-bit) / 16384 (f32)"),
]
