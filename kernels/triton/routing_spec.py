"""MoE routing kernels in Triton (op topk_softmax, kernels/triton/routing.py): softmax or sigmoid gates over E
experts, the k largest with their indices, optionally renormalized. Logits in the I/O dtype; values float32, indices
int32 (int64 declared so). Each row is reduced by one program in a fixed order: same input, same bits."""
from verifier.spec import Expectations, TritonKernel, dtypes, max_row

MAX_E = 4096  # routing.MAX_E: the launcher raises past it


def _k_le_e(k):
    """Rows of fewer experts than k have no top k: refused."""
    row = max_row(MAX_E, None, what="one block's registers")

    def supports(M, N, dt):
        return f"E={N} < k={k}: no top {k} of {N} experts" if N < k else row(M, N, dt)
    return supports


_IO = [dtypes("f32"), dtypes("bf16", "f32")]  # f16 logits read as bf16 are: one path, fewer interpreter runs
_DET = Expectations(deterministic=True)


def _routing(name, launcher="launch", dts=_IO, description="", **params):
    p = {"k": 8, **params}
    return TritonKernel(name=name, op="topk_softmax", module="routing.py", launcher=launcher, dtypes=dts,
                        math_mode="triton_approx", params=p, supports=_k_le_e(p["k"]), expectations=_DET,
                        description=description)


KERNELS = [
    _routing("triton-topk-softmax", description="softmax over E, k rounds of argmax (ties to the smaller index)"),
    _routing("triton-topk-softmax-renorm", dts=[dtypes("bf16", "f32")], renormalize=True, index_dtype="int64",
             description="softmax, top 8, renormalized over the 8, int64 indices"),
    _routing("triton-topk-sigmoid-k1", dts=[dtypes("f32")], k=1, gate="sigmoid",
             description="sigmoid gates, top 1"),
]

