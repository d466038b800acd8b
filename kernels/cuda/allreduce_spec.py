"""Block all-reduce sum (allreduce.cu): y[row] = sum(x[row, :]), one block per row, thread 0 writes.

Same-dtype accumulation (f16/bf16 acc, fp8 -> f16 acc) is a legitimate variant with a large error;
its accumulation dtype is declared so that the tolerance uses the matching bound.
"""
from verifier.spec import Contracts, CudaKernel, Dtypes, Launch, dtypes

THREADS = 256  # AR_THREADS in allreduce.cu

# (dtypes, packings, name suffix) for every instantiation in allreduce.cu (a missing one is a build finding).
VARIANTS = [
    (dtypes("f32"), (1, 4), ""),
    (dtypes("f16"), (1, 2, 8), "-f32acc"),
    (dtypes("bf16"), (1, 2, 8), "-f32acc"),
    (dtypes("f16", acc="f16"), (1, 2, 8), "-f16acc"),
    (dtypes("bf16", acc="bf16"), (1, 2, 8), "-bf16acc"),
    (Dtypes("float8_e4m3fn", "float16", "float16"), (1, 16), "-f16acc"),
    (Dtypes("float8_e5m2", "float16", "float16"), (1, 16), "-f16acc"),
    (Dtypes("int8", "int32", "int32"), (1, 16), "-i32acc"),
]

_ACC_NOTE = {
    "float32": "fp32 accumulation",
    "float16": "f16 accumulation (half2 __hadd2 for packed loads): error grows like N*u_f16 and the sum "
               "overflows to inf past 65504",
    "bfloat16": "bf16 accumulation (bf162 __hadd2 for packed loads): error grows like N*u_bf16",
    "int32": "exact int32 accumulation (__dp4a for packed loads); wraps past 2^31",
}


def _launcher(pack):
    def launches(M, N, dt, params):
        entry = f"allreduce_x{pack}_{dt.tag.replace('-', '_')}"
        return [Launch(entry=entry, grid=(M,), block=(THREADS,), args=("x", "y", "M", "N"))]
    return launches


def _packed(pack, instead):
    return lambda M, N, dt: f"N={N} is not a multiple of the packing {pack}; use {instead}" if N % pack else None


_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "int8": 1}


def _aligned(dt, pack):
    """Packed loads read pack elements at once: rows (and x) aligned to that many bytes, declared. The launches
    pass no row stride: the strided cases are listed as not checked."""
    return Contracts(alignment=min(16, pack * _ITEMSIZE[dt.input])) if pack > 1 else Contracts()


def _make(dt, pack, suffix):
    short = dt.tag.split("-")[0].split("to")[0]  # input dtype tag: 'bf16', 'e4m3', 'i8'
    return CudaKernel(name=f"cuda-allreduce-{short}x{pack}{suffix}", op="reduce_sum", source="allreduce.cu", dtypes=[dt],
                      launches=_launcher(pack), supports=_packed(pack, f"cuda-allreduce-{short}x1{suffix}"),
                      contracts=_aligned(dt, pack),
                      description=(f"{dt.input} -> {dt.output}, {pack} element(s) per load, {_ACC_NOTE[dt.acc]}; "
                                   f"per-thread strided sums, xor-butterfly warp all-reduce, cross-warp pass through "
                                   f"shared memory (every thread holds the total), thread 0 writes y[row]; fixed "
                                   f"order, deterministic."))


KERNELS = [_make(dt, pack, suffix) for dt, packs, suffix in VARIANTS for pack in packs]
