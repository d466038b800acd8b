"""Kernels of ours on the CUDA toolkit's cub (cub_reductions.cu): templated and explicitly instantiated, so each
entry is a C++-mangled name (one per I/O dtype, as `cuobjdump -symbols` or the PTX lists them). fp32 math."""
from verifier.spec import FLOAT_IO, CudaKernel, Launch

THREADS, WARPS = 256, 4  # the instances' block sizes (KV_CUB_INSTANCES in cub_reductions.cu)
ENTRIES = {
    "rmsnorm": {"f32": "_Z11cub_rmsnormIfLi256EEvPKT_S2_PS0_iif",
                "f16": "_Z11cub_rmsnormI6__halfLi256EEvPKT_S3_PS1_iif",
                "bf16": "_Z11cub_rmsnormI13__nv_bfloat16Li256EEvPKT_S3_PS1_iif"},
    "softmax": {"f32": "_Z16cub_warp_softmaxIfLi4EEvPKT_PS0_ii",
                "f16": "_Z16cub_warp_softmaxI6__halfLi4EEvPKT_PS1_ii",
                "bf16": "_Z16cub_warp_softmaxI13__nv_bfloat16Li4EEvPKT_PS1_ii"},
    "sum": {"f32": "_Z13cub_block_sumIfLi256EEvPKT_PS0_ii",
            "f16": "_Z13cub_block_sumI6__halfLi256EEvPKT_PS1_ii",
            "bf16": "_Z13cub_block_sumI13__nv_bfloat16Li256EEvPKT_PS1_ii"},
}


def _rmsnorm(M, N, dt, params):
    return [Launch(ENTRIES["rmsnorm"][dt.tag], grid=(M,), block=(THREADS,), args=("x", "w", "y", "M", "N", "eps"))]


def _softmax(M, N, dt, params):
    grid = (-(-M // WARPS),)  # the last block's surplus warps return at once
    return [Launch(ENTRIES["softmax"][dt.tag], grid=grid, block=(32 * WARPS,), args=("x", "y", "M", "N"))]


def _sum(M, N, dt, params):
    return [Launch(ENTRIES["sum"][dt.tag], grid=(M,), block=(THREADS,), args=("x", "y", "M", "N"))]


KERNELS = [
    CudaKernel(name="cub-rmsnorm", op="rmsnorm", source="cub_reductions.cu", dtypes=FLOAT_IO, launches=_rmsnorm,
               description="block per row, cub::BlockReduce<float, 256> (raking) for sum(x^2); thread 0 writes "
                           "rstd to shared memory; rstd = 1/sqrtf(mean + eps), y = x * rstd * w in fp32"),
    CudaKernel(name="cub-warp-softmax", op="softmax", source="cub_reductions.cu", dtypes=FLOAT_IO, launches=_softmax,
               description="warp per row, 4 rows per block, cub::WarpReduce<float> NaN-propagating max and sum, "
                           "each broadcast from lane 0 with __shfl_sync; reads x three times; any N"),
    CudaKernel(name="cub-block-sum", op="reduce_sum", source="cub_reductions.cu", dtypes=FLOAT_IO, launches=_sum,
               description="y[row] = sum(x[row, :]), cub::BlockReduce<float, 256, BLOCK_REDUCE_WARP_REDUCTIONS>, "
                           "fp32 accumulation, thread 0 writes; fixed order, deterministic"),
]
