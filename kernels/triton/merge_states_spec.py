"""Attention-state merge in Triton (op merge_attn_states, kernels/triton/merge_states.py): rows of head_dim values,
BLOCK_M rows a program, fp32 weights. One program per row block in a fixed order: same input, same bits."""
from verifier.spec import Expectations, TritonKernel, dtypes, max_row

_DET = Expectations(deterministic=True)
_MERGE_ROWS = max_row(8192, None, what="one block per row")
KERNELS = [
    TritonKernel(name="triton-merge-attn-states", op="merge_attn_states", module="merge_states.py", launcher="launch",
                 dtypes=[dtypes("bf16")], math_mode="triton_approx", supports=_MERGE_ROWS,
                 expectations=_DET, description="BLOCK_M rows a program, lse in base e, both empty: NaN"),
    TritonKernel(name="triton-merge-attn-states-base2-zero", op="merge_attn_states", module="merge_states.py",
                 launcher="launch", dtypes=[dtypes("bf16")], math_mode="triton_approx", supports=_MERGE_ROWS,
                 params={"lse_base": "2", "empty": "zero"}, expectations=_DET,
                 description="FlashInfer's base-2 states; both empty gives v = 0, lse = -inf (guarded)"),
]
