"""Online softmax (online_softmax.cu): warp per row (d <= 4096, row in registers) and block per row (any d).

Size classes here must match the macros at the end of online_softmax.cu.
"""
from verifier.errors import UsageError
from verifier.spec import CudaKernel, Expectations, Launch, dtypes, register_resident

WARP_ROWS = 4  # rows (warps) per block of the warp kernel (kWarpRows in online_softmax.cu)
WARP_CLASSES = (1024, 2048, 4096)  # d <= class; ITEMS per lane = class / 32
BLOCK_THREADS = 256
_BLOCK_ALT = "use cuda-online-softmax-block, which takes any d"


def warp_class(N):
    """Smallest class holding N; N above the largest is an error (never a partial row)."""
    for c in WARP_CLASSES:
        if N <= c:
            return c
    raise UsageError(f"d={N} exceeds the warp-per-row register limit {WARP_CLASSES[-1]}", fix=_BLOCK_ALT)


def _warp(M, N, dt, params):
    c = warp_class(N)
    grid = ((M + WARP_ROWS - 1) // WARP_ROWS,)  # the last block's surplus warps return at once
    return [Launch(f"online_softmax_warp_d{c}_{dt.tag}", grid=grid, block=(32 * WARP_ROWS,), args=("x", "y", "M", "N"))]


def _supports_warp(M, N, dt):
    if N > WARP_CLASSES[-1]:
        return (f"N={N} exceeds the register-resident limit {WARP_CLASSES[-1]} "
                f"(ITEMS_PER_LANE*32 = {WARP_CLASSES[-1] // 32}*32); {_BLOCK_ALT}")
    return None


def _block(M, N, dt, params):
    return [Launch(f"online_softmax_block_{dt.tag}", grid=(M,), block=(BLOCK_THREADS,), args=("x", "y", "M", "N"))]


KERNELS = [
    CudaKernel(name="cuda-online-softmax-warp", op="softmax", source="online_softmax.cu",
               dtypes=[dtypes("f32"), dtypes("bf16")], launches=_warp, supports=_supports_warp,
               expectations=register_resident(), math_mode="precise",
               description="one warp per row, 4 rows per block, row in registers (d <= 1024/2048/4096), "
                           "online (max, sum) with -inf guards, warp merge"),
    CudaKernel(name="cuda-online-softmax-block", op="softmax", source="online_softmax.cu",
               dtypes=[dtypes("f32"), dtypes("f16"), dtypes("bf16")], launches=_block,
               expectations=Expectations(deterministic=True), math_mode="precise",
               description="one block per row, any d: per-thread online (max, sum), block merge, second read "
                           "to normalize"),
]
