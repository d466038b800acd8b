"""MoE routing in CUDA (op topk_softmax, routing.cu): one warp per row, four rows per 128-thread block, the row's E
gating logits in registers (E <= 512), k <= 32 rounds of a warp argmax. Logits f32 / f16 / bf16; values float32;
indices int32 (int64 declared so). Deterministic: a fixed order of operations per row."""
from verifier.spec import FLOAT_IO, CudaKernel, Expectations, Launch, Scalar, Stride, dtypes

ROWS = 4  # warps (rows) per 128-thread block
VPTS = (1, 2, 4, 8, 16)  # experts per lane of the entries: E <= 32 * VPT
MAX_E, MAX_K = 32 * VPTS[-1], 32
_TAG = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _vpt(E: int) -> int:
    return next(v for v in VPTS if 32 * v >= E)


def _supports(k: int):
    def supports(M, N, dt):
        if N < k:
            return f"E={N} < k={k}: no top {k} of {N} experts"
        if N > MAX_E:
            return f"E={N} exceeds the warp-per-row limit {MAX_E} (16 experts a lane)"
        return None
    return supports


def _launches(M, N, dt, p):
    entry = f"topk_softmax_{_TAG[dt.input]}_i{p['index_dtype'][3:]}_v{_vpt(N)}"
    return [Launch(entry, grid=(-(-M // ROWS),), block=(32 * ROWS,),
                   args=("x", "values", "indices", "M", "N", Scalar("int32", int(p["k"])),
                         Scalar("int32", int(bool(p["renormalize"]))), Scalar("int32", int(p["gate"] == "sigmoid")),
                         Stride("x", "int64"), Stride("values", "int64"), Stride("indices", "int64")))]


_IO = [dtypes(d.input, "f32") for d in FLOAT_IO]
_DET = Expectations(deterministic=True, max_spill_bytes=0, max_stack_bytes=0)


def _routing(name, dts=_IO, description="", **params):
    p = {"k": 8, **params}
    if not 1 <= p["k"] <= MAX_K:
        raise ValueError(f"{name}: k={p['k']} outside 1..{MAX_K}")
    return CudaKernel(name=name, op="topk_softmax", source="routing.cu", dtypes=dts, launches=_launches, params=p,
                      supports=_supports(p["k"]), expectations=_DET, description=description)


KERNELS = [
    _routing("cuda-topk-softmax", description="warp per row: softmax over E <= 512, 8 rounds of a warp argmax"),
    _routing("cuda-topk-softmax-renorm-i64", dts=[dtypes("bf16", "f32")], renormalize=True, index_dtype="int64",
             description="warp per row, top 8 renormalized over the 8, int64 indices"),
    _routing("cuda-topk-sigmoid-k1", dts=[dtypes("f32")], k=1, gate="sigmoid",
             description="warp per row, sigmoid gates, top 1"),
]
