"""Attention-state merge in CUDA (op merge_attn_states, merge_states.cu): one warp per row, four rows per 128-thread
block, fp32 weights, lanes striding over the row's values. Values f32 / f16 / bf16; lse float32. Deterministic."""
from verifier.spec import FLOAT_IO, CudaKernel, Expectations, Launch, Scalar, Stride, dtypes

ROWS = 4  # warps (rows) per 128-thread block


def _launches(M, N, dt, p):
    return [Launch(f"merge_attn_states_{dt.tag}", grid=(-(-M // ROWS),), block=(32 * ROWS,),
                   args=("x", "lse_a", "v_b", "lse_b", "v", "lse", "M", "N",
                         Scalar("int32", int(p["lse_base"] == "2")), Scalar("int32", int(p["empty"] == "zero")),
                         Stride("x", "int64"), Stride("v_b", "int64"), Stride("v", "int64")))]


_DET = Expectations(deterministic=True, max_spill_bytes=0, max_stack_bytes=0)

KERNELS = [
    CudaKernel(name="cuda-merge-attn-states", op="merge_attn_states", source="merge_states.cu", dtypes=FLOAT_IO,
               launches=_launches, expectations=_DET,
               description="warp per row: weights exp(lse - max) in fp32, lanes stride the row; base e, both empty NaN"),
    CudaKernel(name="cuda-merge-attn-states-base2-zero", op="merge_attn_states", source="merge_states.cu",
               dtypes=[dtypes("bf16")], launches=_launches, params={"lse_base": "2", "empty": "zero"},
               expectations=_DET,
               description="warp per row, FlashInfer's base-2 states, both empty gives v = 0, lse = -inf"),
]
