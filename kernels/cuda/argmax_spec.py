"""Each row's argmax in CUDA (argmax.cu; op row_argmax, greedy sampling): one 256-thread block per row, any N, each
thread's first maximum, then (value, column) pairs merged exactly by warp shuffles and shared memory: the first
column of the maximum (ties='first'), NaN the maximum as torch.argmax. int64 row offsets. Deterministic: a fixed
order of operations per row."""
from verifier.spec import FLOAT_IO, CudaKernel, Expectations, Launch, Stride

THREADS = 256  # BLOCK in argmax.cu
_ITAG = {"int32": "i32", "int64": "i64"}


def _launches(M, N, dt, p):
    value = bool(p.get("value"))
    entry = f"row_argmax{'_value' if value else ''}_{dt.tag}_{_ITAG[p['index_dtype']]}"
    return [Launch(entry, grid=(M,), block=(THREADS,),
                   args=("x", "index") + (("value",) if value else ()) + ("M", "N", Stride("x", "int64")))]


_COMMON = dict(source="argmax.cu", dtypes=FLOAT_IO, launches=_launches,
               expectations=Expectations(deterministic=True, max_spill_bytes=0, max_stack_bytes=0))
KERNELS = [
    CudaKernel(name="cuda-row-argmax", op="row_argmax",
               description="block per row: per-thread first maximum, exact (value, column) merge; int64 index",
               **_COMMON),
    CudaKernel(name="cuda-row-argmax-int32-value", op="row_argmax", params={"index_dtype": "int32", "value": True},
               description="as cuda-row-argmax, int32 index (ggml's dst) and the maximum itself", **_COMMON),
]
