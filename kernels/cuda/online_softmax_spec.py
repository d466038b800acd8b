"""Online softmax (online_softmax.cu): warp per row (d <= 4096, row in registers) and block per row (any d)."""
from verifier.spec import FLOAT_IO, CudaKernel, Launch, SizeClasses, Stride, dtypes, register_resident

WARP_ROWS = 4  # rows (warps) per block of the warp kernel (kWarpRows in online_softmax.cu)
BLOCK_THREADS = 256
XY = ("x", "y", "M", "N", Stride("x", "int64"), Stride("y", "int64"))  # row strides: views such as qkv[:, :N]


def _warp(M, N, dt, params):
    grid = ((M + WARP_ROWS - 1) // WARP_ROWS,)  # the last block's surplus warps return at once
    return [Launch(WARP.entry(N, dt), grid=grid, block=(32 * WARP_ROWS,), args=XY)]


def _block(M, N, dt, params):
    return [Launch(f"online_softmax_block_{dt.tag}", grid=(M,), block=(BLOCK_THREADS,), args=XY)]


# d <= class; ITEMS per lane = class / 32
WARP = SizeClasses((1024, 2048, 4096), entry="online_softmax_warp_d{c}_{tag}",
                   instead="cuda-online-softmax-block, which takes any d")

KERNELS = [
    CudaKernel(name="cuda-online-softmax-warp", op="softmax", source="online_softmax.cu", sizes=WARP,
               dtypes=[dtypes("f32"), dtypes("bf16")], launches=_warp, expectations=register_resident(),
               description="one warp per row, 4 rows per block, row in registers (d <= 1024/2048/4096), "
                           "online (max, sum) with -inf guards, warp merge"),
    CudaKernel(name="cuda-online-softmax-block", op="softmax", source="online_softmax.cu", dtypes=FLOAT_IO,
               launches=_block,
               description="one block per row, any d: per-thread online (max, sum), block merge, second read "
                           "to normalize"),
]
