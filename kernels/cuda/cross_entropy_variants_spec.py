"""Cross entropy variants (cross_entropy_variants.cu): one block of 256 threads per row, online max/sum of the capped
logits, any vocabulary size; the batch's mean / sum by a second one-block launch over a per-row workspace (a fixed
order: deterministic). Logits f32 / f16 / bf16, the loss in float32, int64 labels."""
from verifier.spec import FLOAT_IO, CudaKernel, Launch, Scalar, Stride, Workspace, dtypes

THREADS = 256  # kCeThreads
ROWS = Workspace("rows", lambda M, N: M)  # the per-row losses before the batch's reduction


def _launches(M, N, dt, params):
    reduction = params.get("reduction", "none")
    out = "loss" if reduction == "none" else ROWS
    ign = Scalar("int64", params["ignore_index"])
    launches = [Launch(f"ce_var_rows_{dt.tag}_i64", grid=(M,), block=(THREADS,),
                       args=("x", "labels", out, "M", "N", ign, Stride("x", "int64"),
                             *(Scalar("float32", params[k]) for k in ("label_smoothing", "z_loss", "softcap"))))]
    if reduction != "none":
        launches.append(Launch("ce_var_batch_i64", grid=(1,), block=(THREADS,),
                               args=(ROWS, "labels", "loss", "M", ign, Scalar("int32", int(reduction == "mean")))))
    return launches


_COMMON = dict(source="cross_entropy_variants.cu", launches=_launches, online=True,
               dtypes=[dtypes(d.input, "f32") for d in FLOAT_IO])

KERNELS = [
    CudaKernel(name="cuda-ce-smoothing", op="cross_entropy", params={"label_smoothing": 0.1},
               description="label smoothing 0.1 (PyTorch), per row", **_COMMON),
    CudaKernel(name="cuda-ce-zloss-softcap", op="cross_entropy", params={"z_loss": 1e-4, "softcap": 30.0},
               description="z_loss 1e-4 and softcap 30 (Gemma 2), per row", **_COMMON),
    CudaKernel(name="cuda-ce-mean", op="cross_entropy_reduced", params={"reduction": "mean", "label_smoothing": 0.1},
               description="mean over the non-ignored rows, label smoothing 0.1", **_COMMON),
    CudaKernel(name="cuda-ce-sum", op="cross_entropy_reduced",
               params={"reduction": "sum", "z_loss": 1e-4, "softcap": 30.0},
               description="sum over the rows, z_loss 1e-4 and softcap 30", **_COMMON),
]
