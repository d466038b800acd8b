"""Cross entropy variants (cross_entropy_variants.py): label smoothing, z_loss and softcap per row, and the batch's
mean / sum (op cross_entropy_reduced); three kernels keep the interpreter's CI time small, the CUDA spec has four.
Logits in bf16 or f32, the loss in float32, int64 labels. Two kernels in a fixed order: the same input gives the
same bits."""
from verifier.spec import Expectations, TritonKernel, dtypes

_COMMON = dict(module="cross_entropy_variants.py", launcher="launch", math_mode="triton_approx", online=True,
               expectations=Expectations(deterministic=True))
BF16, F32 = [dtypes("bf16", "f32")], [dtypes("f32")]  # the reduced kernels one dtype each: the interpreter's CI time

ALL = {"label_smoothing": 0.1, "z_loss": 1e-4, "softcap": 30.0}  # every per-row variant at once

KERNELS = [
    TritonKernel(name="triton-ce-variants", op="cross_entropy", params=ALL, dtypes=BF16 + F32,
                 description="per row: label smoothing 0.1, z_loss 1e-4, softcap 30 (Gemma 2)", **_COMMON),
    TritonKernel(name="triton-ce-mean", op="cross_entropy_reduced",
                 params={"reduction": "mean", "label_smoothing": 0.1}, dtypes=BF16, description="mean over the non-ignored rows, label smoothing 0.1", **_COMMON),
    TritonKernel(name="triton-ce-sum", op="cross_entropy_reduced",
                 params={"reduction": "sum", "z_loss": 1e-4, "softcap": 30.0}, dtypes=F32,
                 description="sum over the rows, z_loss 1e-4 and softcap 30", **_COMMON),
]
