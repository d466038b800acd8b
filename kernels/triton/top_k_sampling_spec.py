"""Sampling's top-k filters in Triton (kernels/triton/top_k_sampling.py): ops top_k_renorm_probs and
top_k_mask_logits, the exact k-th largest by a binary search over order-preserving int32 keys, every tie at it kept
(ties='keep_all'). Up to 16 rows per program, each reduced in a fixed order: same input, same bits."""
from verifier.spec import Expectations, TritonKernel, dtypes, max_row

MAX_N = 8192  # top_k_sampling.MAX_N: the launcher raises past it
_DET = Expectations(deterministic=True)
# One dtype per renorm variant: each dtype costs the CPU suites seconds of interpreter and derived budget.
_ROW = max_row(MAX_N, None, what="one block's registers")


def _filter(name, op, launcher, dts, description, **params):
    return TritonKernel(name=name, op=op, module="top_k_sampling.py", launcher=launcher, dtypes=dts,
                        math_mode="triton_approx", params={"k": 8, **params}, supports=_ROW, expectations=_DET,
                        description=description)


KERNELS = [
    _filter("triton-top-k-renorm-probs", "top_k_renorm_probs", "renorm", [dtypes("f32")],
            "probs >= the k-th largest kept, divided by their fp32 sum; 0 elsewhere"),
    _filter("triton-top-k-renorm-probs-floor", "top_k_renorm_probs", "renorm", [dtypes("bf16")],
            "as FlashInfer: divided by max(sum, 1e-8), k = 1", k=1, sum_floor=1e-8),
    _filter("triton-top-k-mask-logits", "top_k_mask_logits", "mask", [dtypes("f32"), dtypes("bf16")],
            "logits >= the k-th largest kept, -inf elsewhere"),
]
