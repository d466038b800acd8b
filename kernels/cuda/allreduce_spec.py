"""Block all-reduce sum (allreduce.cu): y[row] = sum(x[row, :]), one block per row, thread 0 writes.

Same-dtype accumulation (f16/bf16 acc, fp8 -> f16 acc) is a legitimate variant with a large error;
its accumulation dtype is declared so that the tolerance uses the matching bound.
"""
from verifier.spec import CudaKernel, Dtypes, Expectations, Launch, dtypes

THREADS = 256  # AR_THREADS in allreduce.cu

# (dtypes, packings, name suffix) for every instantiation in allreduce.cu; keep in sync.
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


def _entry(pack, dt):
    return f"allreduce_x{pack}_{dt.tag.replace('-', '_')}"


def _make(dt, pack, suffix):
    short = dt.tag.split("-")[0].split("to")[0]  # input dtype tag: 'bf16', 'e4m3', 'i8'

    def launches(M, N, d, params):
        return [Launch(entry=_entry(pack, d), grid=(M,), block=(THREADS,), args=("x", "y", "M", "N"))]

    def supports(M, N, d):
        if N % pack:
            return f"N={N} is not a multiple of the packing {pack}; use cuda-allreduce-{short}x1{suffix}"
        return None

    return CudaKernel(
        name=f"cuda-allreduce-{short}x{pack}{suffix}", op="reduce_sum", source="allreduce.cu", dtypes=[dt],
        launches=launches, supports=supports, expectations=Expectations(), math_mode="precise",
        description=(f"{dt.input} -> {dt.output}, {pack} element(s) per load, {_ACC_NOTE[dt.acc]}; per-thread "
                     f"strided sums, xor-butterfly warp all-reduce, cross-warp pass through shared memory "
                     f"(every thread holds the total), thread 0 writes y[row]; fixed order, deterministic."),
    )


KERNELS = [_make(dt, pack, suffix) for dt, packs, suffix in VARIANTS for pack in packs]
