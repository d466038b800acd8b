"""Softmax past the S1-S4 ladder (softmax_fast.cu): fp32 math, I/O f32 / f16 / bf16, 16-byte vectors.

S5: the row in registers, with as many threads per row as the row needs (a warp for N <= 2048),
several rows per 256-thread block, all loads issued before the first use.
split: several 512-thread blocks per row (vocab rows), two launches: per-chunk (max, sum) states, then
merge and normalize; takes any N that is a multiple of the vector width.
cluster: a row over the 8 blocks of a thread-block cluster (sm_90), one launch, one read of x (vocab rows).
S5f: S5 with the 'fast' math (approximate exp, a multiply by 1/s), the contract of Liger's Triton softmax.
The S5_CONFIGS / S5F_CONFIGS tables must match the KV_S5_16 / KV_S5_32 / KV_S5F_16 / KV_S5F_32 macros at the
end of softmax_fast.cu.
"""
from verifier.errors import UsageError
from verifier.spec import CudaKernel, Launch, Scalar, dtypes, register_resident

BLOCK = 256  # kBlock: S5 blocks hold BLOCK // tpr rows when a row takes fewer threads
VEC_WIDTH = {"float32": 4, "float16": 8, "bfloat16": 8}  # elements per 16-byte vector
# (threads per row, vectors per thread[, min blocks per SM of the entry's launch bounds]), smallest first;
# a row of N fits when tpr * vecs * width >= N.
S5_CONFIGS = {
    8: ((32, 1), (32, 2), (32, 4), (32, 8), (64, 7), (64, 8, 3), (256, 4), (512, 4), (512, 8)),
    4: ((32, 1), (32, 2), (32, 4), (64, 4), (64, 8), (224, 4), (128, 8), (512, 4), (512, 8), (512, 16)),
}
# S5f (the 'fast' math of S5): its own table, so that a tune can move it apart from S5's (KV_S5F_16 / KV_S5F_32).
S5F_CONFIGS = {
    8: ((32, 1), (32, 2), (32, 4), (32, 8, 3), (128, 4, 4), (256, 4), (512, 4), (512, 8)),
    4: S5_CONFIGS[4],
}
SPLIT_THREADS, SPLIT_VECS = 512, 4  # kSplitThreads and the VECS of KV_SPLIT
CLUSTER, CLUSTER_THREADS = 8, 512  # kCluster blocks of kClusterThreads per row
CLUSTER_VECS = {4: 10, 8: 5}  # vectors a thread (KV_CLUSTER): 163840 columns for every width
WORKSPACE = "tmp:ms:2*M*(N//8192+1):float32"  # (max, sum) per chunk; chunks <= N // 8192 + 1 for every width
IO = [dtypes("f32"), dtypes("f16"), dtypes("bf16")]


def s5_config(N, dt, configs=S5_CONFIGS):
    """(threads per row, vectors per thread, entry name suffix) of the smallest S5 class holding N columns."""
    w = VEC_WIDTH[dt.input]
    for tpr, vecs, *minb in configs[w]:
        if tpr * vecs * w >= N:
            return tpr, vecs, "".join(f"_m{b}" for b in minb)
    raise UsageError(f"N={N} exceeds the register-resident limit {s5_limit(dt, configs)} of this S5 size-class table",
                     fix="use cuda-softmax-split, which takes any N")


def s5_limit(dt, configs=S5_CONFIGS):
    w = VEC_WIDTH[dt.input]
    tpr, vecs = configs[w][-1][:2]
    return tpr * vecs * w


def split_chunks(N, dt):
    """Blocks per row of cuda-softmax-split."""
    per_block = SPLIT_THREADS * SPLIT_VECS * VEC_WIDTH[dt.input]
    return -(-N // per_block)


def _s5_launch(stem, configs):
    def launches(M, N, dt, params):
        tpr, vecs, suffix = s5_config(N, dt, configs)
        rows = max(1, BLOCK // tpr)
        return [Launch(f"{stem}_t{tpr}_v{vecs}{suffix}_{dt.tag}", grid=(-(-M // rows),), block=(tpr * rows,),
                       args=("x", "y", "M", "N"))]
    return launches


_s5 = _s5_launch("softmax_s5", S5_CONFIGS)
_s5f = _s5_launch("softmax_s5f", S5F_CONFIGS)


def _split(M, N, dt, params):
    chunks = split_chunks(N, dt)
    c = Scalar("int32", chunks)
    return [
        Launch(f"softmax_split_stats_{dt.tag}", grid=(M * chunks,), block=(SPLIT_THREADS,),
               args=("x", WORKSPACE, "M", "N", c)),
        Launch(f"softmax_split_norm_{dt.tag}", grid=(M * chunks,), block=(SPLIT_THREADS,),
               args=("x", WORKSPACE, "y", "M", "N", c)),
    ]


def cluster_limit(dt):
    w = VEC_WIDTH[dt.input]
    return CLUSTER * CLUSTER_THREADS * CLUSTER_VECS[w] * w


def _cluster(M, N, dt, params):
    return [Launch(f"softmax_cluster_{dt.tag}", grid=(M * CLUSTER,), block=(CLUSTER_THREADS,), args=("x", "y", "M", "N"))]


def _gpu_capability():
    # From the CUDA driver, not torch: the check child of a CUDA kernel does not import torch (4-5 s).
    try:
        from verifier.gpu.libcuda import device_capability
        from verifier.gpu.probe import driver_device_count

        return device_capability() if driver_device_count() > 0 else None
    except Exception:
        return None


def _supports_cluster(M, N, dt):
    why = _vector_reason(N, dt, "cuda-softmax-s2")
    if why:
        return why
    if N > cluster_limit(dt):
        return f"N={N} exceeds {cluster_limit(dt)} (8 blocks x 512 threads x 40 elements); use cuda-softmax-split"
    if _grid_reason(M, CLUSTER):
        return _grid_reason(M, CLUSTER)
    cap = _gpu_capability()
    if cap is not None and cap < (9, 0):
        return f"thread-block clusters need compute capability 9.0; this GPU is {cap[0]}.{cap[1]}"
    return None


def _vector_reason(N, dt, instead):
    w = VEC_WIDTH[dt.input]
    if N % w:
        return f"N={N} is not a multiple of the {w}-element 16-byte vector of {dt.input}; use {instead} (scalar loads)"
    return None


def _supports_s5_table(configs):
    def supports(M, N, dt):
        why = _vector_reason(N, dt, "cuda-softmax-s3")
        if why:
            return why
        if N > s5_limit(dt, configs):
            return (f"N={N} exceeds the register-resident limit {s5_limit(dt, configs)} for {dt.input} "
                    f"(up to 512 threads a row, 64 elements a thread); use cuda-softmax-split")
        return None
    return supports


_supports_s5 = _supports_s5_table(S5_CONFIGS)
_supports_s5f = _supports_s5_table(S5F_CONFIGS)


def _supports_split(M, N, dt):
    why = _vector_reason(N, dt, "cuda-softmax-s2")
    if why:
        return why
    return _grid_reason(M, split_chunks(N, dt))


def _grid_reason(M, per_row):
    if M * per_row > 2**31 - 1:
        return f"M={M} rows of {per_row} blocks exceed the grid's 2^31 - 1 blocks"
    return None


KERNELS = [
    CudaKernel(name="cuda-softmax-s5", op="softmax", source="softmax_fast.cu", dtypes=IO, launches=_s5,
               supports=_supports_s5, expectations=register_resident(), math_mode="precise",
               description="row in registers, threads per row sized to N (a warp up to 2048 columns), "
                           "16-byte loads all in flight first; N % width == 0, N <= 32768"),
    CudaKernel(name="cuda-softmax-s5f", op="softmax", source="softmax_fast.cu", dtypes=IO, launches=_s5f,
               supports=_supports_s5f, expectations=register_resident(), math_mode="fast",
               description="S5 with fast math, as Liger's Triton softmax: exp by ex2.approx.ftz of (x - m) log2 e, "
                           "y = e * (1/s); declared math_mode 'fast' (2 ulp + 2.35u|x - m| exp, 2 ulp quotient, "
                           "flush to zero)"),
    CudaKernel(name="cuda-softmax-split", op="softmax", source="softmax_fast.cu", dtypes=IO, launches=_split,
               supports=_supports_split, expectations=register_resident(), math_mode="precise",
               description="several blocks per row: per-chunk (max, sum) states, then merge in a fixed "
                           "order and normalize (re-reads x); any N % width == 0"),
    CudaKernel(name="cuda-softmax-cluster", op="softmax", source="softmax_fast.cu", dtypes=IO, launches=_cluster,
               supports=_supports_cluster, expectations=register_resident(), math_mode="precise",
               description="a row over an 8-block thread-block cluster (sm_90): chunks in registers, max and sum "
                           "exchanged through distributed shared memory, one read of x; N % width == 0, "
                           "N <= 163840"),
]
