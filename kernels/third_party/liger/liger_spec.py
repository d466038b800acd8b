"""Liger-Kernel's Triton kernels (pip install liger-kernel==0.8.5), declared through the library's own Python
functions (launchers.py). Its row kernels hold a whole row in one block: Liger raises past 65536 columns.
Resources and refusals are checked on a GPU; on the CPU they run in the Triton interpreter (see launchers.py).
"""
from verifier.spec import FLOAT_IO, Expectations, TritonKernel, dtypes, max_row

REQUIRES = {"liger_kernel": "liger-kernel==0.8.5"}
ONE_BLOCK = max_row(65536, what="Liger's block limit (MAX_FUSED_SIZE)")
# Each row is reduced by one program in a fixed order: the same input gives the same bits.
_COMMON = dict(module="launchers.py", math_mode="triton_approx", requires=REQUIRES,
               expectations=Expectations(deterministic=True))

KERNELS = [
    # casting_mode="llama" (Hugging Face's LlamaRMSNorm): x·rstd is rounded to the I/O dtype before the weight
    # multiply, a second rounding at the output (docs/tolerances.md: base_ulps 2)
    TritonKernel(name="liger-rmsnorm", op="rmsnorm", launcher="rmsnorm_llama", dtypes=FLOAT_IO, supports=ONE_BLOCK,
                 tolerance={"base_ulps": 2}, **_COMMON),
    # casting_mode="gemma", offset=1 (Gemma's (1 + w)): everything in fp32, one rounding at the output
    TritonKernel(name="liger-gemma-rmsnorm", op="rmsnorm", launcher="rmsnorm_gemma", dtypes=FLOAT_IO,
                 supports=ONE_BLOCK, params={"offset": 1.0}, **_COMMON),
    # fp32 weights and bias with bf16 activations, as mixed-precision training keeps them
    TritonKernel(name="liger-layernorm", op="layernorm", launcher="layernorm", supports=ONE_BLOCK,
                 dtypes=[*FLOAT_IO, dtypes("bf16", weight="f32")], **_COMMON),
    TritonKernel(name="liger-fused-add-rmsnorm", op="fused_add_rmsnorm", launcher="fused_add_rmsnorm",
                 dtypes=FLOAT_IO, supports=ONE_BLOCK, **_COMMON),
    TritonKernel(name="liger-softmax", op="softmax", launcher="softmax", dtypes=FLOAT_IO, supports=ONE_BLOCK,
                 **_COMMON),
    # the loss in the logits' dtype (Liger keeps it so); int64 labels. Liger's forward writes the gradient over the
    # logits (it saves the backward pass a buffer): the logits are scratch, declared, not an input-clobbered finding
    TritonKernel(name="liger-cross-entropy", op="cross_entropy", launcher="cross_entropy", dtypes=FLOAT_IO,
                 online=True, scratch_inputs=("x",), **_COMMON),
    # Its variants (the same forward): label smoothing, z_loss with softcap, the batch's mean and sum. Reduced, Liger
    # stores each row's loss (divided by the count for the mean) in the logits' dtype and sums those: bf16 / f16
    # outputs round twice (base_ulps 2); a mean over no counted row is 0, not PyTorch's NaN (empty_mean='zero').
    # One dtype each (bf16 and f32 alternate): the interpreter's CI time
    *(TritonKernel(name=f"liger-ce-{tag}", op=op, launcher="cross_entropy_variants", dtypes=[dtypes(dt)], online=True,
                   scratch_inputs=("x",), params=p, tolerance={"base_ulps": 2} if op != "cross_entropy" else {},
                   **_COMMON)
      for tag, op, dt, p in (("smoothing", "cross_entropy", "bf16", {"label_smoothing": 0.1}),
                             ("zloss-softcap", "cross_entropy", "f32", {"z_loss": 1e-4, "softcap": 30.0}),
                             ("mean", "cross_entropy_reduced", "bf16", {"reduction": "mean", "label_smoothing": 0.1,
                                                                        "empty_mean": "zero"}),
                             ("sum", "cross_entropy_reduced", "f32", {"reduction": "sum", "z_loss": 1e-4,
                                                                      "softcap": 30.0}))),
    # GroupNorm (issue #37) on x viewed as (M, C, N/C), per-channel weight and bias; the variance is
    # E[x^2] - E[x]^2 in fp32, which cancels on mean >> std groups: the value check's finding is true
    TritonKernel(name="liger-group-norm", op="group_norm", launcher="group_norm", dtypes=FLOAT_IO, **_COMMON),
]
