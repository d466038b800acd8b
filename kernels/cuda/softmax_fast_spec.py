"""Softmax past the S1-S4 ladder (softmax_fast.cu): fp32 math, I/O f32 / f16 / bf16, 16-byte vectors.

S5: the row in registers, with as many threads per row as the row needs (a warp for N <= 2048),
several rows per 256-thread block, all loads issued before the first use.
split: several 512-thread blocks per row (vocab rows), two launches: per-chunk (max, sum) states, then
merge and normalize; takes any N that is a multiple of the vector width.
cluster: a row over the 8 blocks of a thread-block cluster (sm_90), one launch, one read of x (vocab rows).
S5f: S5 with the 'fast' math (approximate exp, a multiply by 1/s), the contract of Liger's Triton softmax.
The size classes are the KV_S5_16 / KV_S5_32 / KV_S5F_16 / KV_S5F_32 macros at the end of softmax_fast.cu (the
build step reports a class whose entry the .cu lacks); benchmarks/softmax_tune.py picks them.
"""
from verifier.spec import (FLOAT_IO, Contracts, CudaKernel, Launch, Scalar, SizeClasses, Workspace, grid_limit,
                           max_row, register_resident, vector_width, whole_vectors)

BLOCK = 256  # kBlock: S5 blocks hold BLOCK // tpr rows when a row takes fewer threads
XY = ("x", "y", "M", "N")
# (threads per row, 16-byte vectors per thread[, min blocks per SM of the entry's launch bounds]), smallest first.
S5_16 = ((32, 1), (32, 2), (32, 4), (32, 8), (64, 7), (64, 8, 3), (256, 4), (512, 4), (512, 8))
S5_32 = ((32, 1), (32, 2), (32, 4), (64, 4), (64, 8), (224, 4), (128, 8), (512, 4), (512, 8), (512, 16))
S5F_16 = ((32, 1), (32, 2), (32, 4), (32, 8, 3), (128, 4, 4), (256, 4), (512, 4), (512, 8))  # tuned apart from S5
SPLIT_THREADS, SPLIT_VECS = 512, 4  # kSplitThreads and the VECS of KV_SPLIT
CLUSTER, CLUSTER_THREADS = 8, 512  # kCluster blocks of kClusterThreads per row
MS = Workspace("ms", lambda M, N: 2 * M * (N // 8192 + 1))  # (max, sum) per chunk; chunks <= N // 8192 + 1
_SPLIT = "cuda-softmax-split, which takes any N"


def _s5_launch(sizes):
    def launches(M, N, dt, params):
        tpr = sizes.of(N, dt).threads
        rows = max(1, BLOCK // tpr)
        return [Launch(sizes.entry(N, dt), grid=(-(-M // rows),), block=(tpr * rows,), args=XY)]
    return launches


def split_chunks(N, dt):
    """Blocks per row of cuda-softmax-split."""
    return -(-N // (SPLIT_THREADS * SPLIT_VECS * vector_width(dt)))


def _split(M, N, dt, params):
    c = Scalar("int32", split_chunks(N, dt))
    grid, block = (M * c.value,), (SPLIT_THREADS,)
    return [Launch(f"softmax_split_stats_{dt.tag}", grid=grid, block=block, args=("x", MS, "M", "N", c)),
            Launch(f"softmax_split_norm_{dt.tag}", grid=grid, block=block, args=("x", MS, "y", "M", "N", c))]


def _cluster(M, N, dt, params):
    return [Launch(f"softmax_cluster_{dt.tag}", grid=(M * CLUSTER,), block=(CLUSTER_THREADS,), args=XY)]


S5 = SizeClasses({"f32": S5_32, "f16": S5_16, "bf16": S5_16}, entry="softmax_s5_{c}_{tag}", instead=_SPLIT)
S5F = SizeClasses({"f32": S5_32, "f16": S5F_16, "bf16": S5F_16}, entry="softmax_s5f_{c}_{tag}", instead=_SPLIT)
# 8 blocks x 512 threads x 40 elements (KV_CLUSTER: 10 f32 or 5 16-bit vectors a thread)
CLUSTER_ROWS = max_row(163840, "cuda-softmax-split", what="the 8-block cluster's limit")
# Every kernel here loads and stores 16-byte vectors: tensors one element past a 16-byte boundary are not taken.
# The launches pass no row stride (tuned entries, benchmarks/softmax_tune.py): the strided cases are listed as not
# checked, and a caller with a view passes .contiguous().
ALIGNED = Contracts(alignment=16)

KERNELS = [
    CudaKernel(name="cuda-softmax-s5", op="softmax", source="softmax_fast.cu", dtypes=FLOAT_IO, launches=_s5_launch(S5),
               sizes=S5, supports=whole_vectors("cuda-softmax-s3"), expectations=register_resident(), contracts=ALIGNED,
               description="row in registers, threads per row sized to N (a warp up to 2048 columns), "
                           "16-byte loads all in flight first; N % width == 0, N <= 32768"),
    CudaKernel(name="cuda-softmax-s5f", op="softmax", source="softmax_fast.cu", dtypes=FLOAT_IO,
               launches=_s5_launch(S5F), sizes=S5F, supports=whole_vectors("cuda-softmax-s3"),
               expectations=register_resident(), math_mode="fast", contracts=ALIGNED,
               description="S5 with fast math, as Liger's Triton softmax: exp by ex2.approx.ftz of (x - m) log2 e, "
                           "y = e * (1/s); declared math_mode 'fast' (2 ulp + 2.35u|x - m| exp, 2 ulp quotient, "
                           "flush to zero)"),
    CudaKernel(name="cuda-softmax-split", op="softmax", source="softmax_fast.cu", dtypes=FLOAT_IO, launches=_split,
               supports=[whole_vectors("cuda-softmax-s2"), grid_limit(split_chunks)], expectations=register_resident(),
               contracts=ALIGNED,
               description="several blocks per row: per-chunk (max, sum) states, then merge in a fixed "
                           "order and normalize (re-reads x); any N % width == 0"),
    CudaKernel(name="cuda-softmax-cluster", op="softmax", source="softmax_fast.cu", dtypes=FLOAT_IO, launches=_cluster,
               supports=[whole_vectors("cuda-softmax-s2"), CLUSTER_ROWS, grid_limit(CLUSTER)], min_capability=(9, 0),
               expectations=register_resident(), contracts=ALIGNED,
               description="a row over an 8-block thread-block cluster (sm_90): chunks in registers, max and sum "
                           "exchanged through distributed shared memory, one read of x; N % width == 0, "
                           "N <= 163840"),
]
