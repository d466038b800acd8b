"""Sampling's top-k filters in CUDA (ops top_k_renorm_probs, top_k_mask_logits; top_k_sampling.cu): one 256-thread
block per row, the row and its order-preserving int32 keys in registers (N <= 8192: 32 a thread), the exact k-th
largest by a 32-round binary search over the keys, every tie kept (ties='keep_all'). Deterministic: a fixed order of
operations per row."""
from verifier.spec import FLOAT_IO, CudaKernel, Expectations, Launch, Scalar, Stride, max_row

VPTS = (1, 2, 4, 8, 16, 32)  # elements per thread of the entries: N <= 256 * VPT
MAX_N = 256 * VPTS[-1]
_TAG = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _launches(op, out):
    def launches(M, N, dt, p):
        floor = (Scalar("float32", float(p["sum_floor"])),) if op == "top_k_renorm_probs" else ()
        vpt = next(v for v in VPTS if 256 * v >= N)
        return [Launch(f"{op}_{_TAG[dt.input]}_v{vpt}", grid=(M,), block=(256,),
                       args=("x", out, "M", "N", Scalar("int32", int(p["k"]))) + floor
                       + (Stride("x", "int64"), Stride(out, "int64")))]
    return launches


_COMMON = dict(source="top_k_sampling.cu", dtypes=FLOAT_IO, supports=max_row(MAX_N, what="32 elements a thread"),
               expectations=Expectations(deterministic=True, max_spill_bytes=0, max_stack_bytes=0))
KERNELS = [
    CudaKernel(name="cuda-top-k-renorm-probs", op="top_k_renorm_probs", launches=_launches("top_k_renorm_probs",
               "renormed"), description="block per row: exact k-th largest (binary search on keys), kept / sum",
               **_COMMON),
    CudaKernel(name="cuda-top-k-renorm-probs-floor-k1", op="top_k_renorm_probs", params={"k": 1, "sum_floor": 1e-8},
               launches=_launches("top_k_renorm_probs", "renormed"), description="k = 1, kept / max(sum, 1e-8)",
               **_COMMON),
    CudaKernel(name="cuda-top-k-mask-logits", op="top_k_mask_logits", launches=_launches("top_k_mask_logits",
               "masked"), description="block per row: exact k-th largest (binary search on keys), -inf elsewhere",
               **_COMMON),
]
