"""Triton reduction kernels under test: one program per row, fp32 math, fp32/fp16/bf16 I/O.

math_mode 'triton_approx': Triton lowers fp32 exp to ex2.approx (after a multiply by log2 e),
fp32 '/' to div.full.f32 and rsqrt to rsqrt.approx, so these kernels are held to the
approximate-math tolerance column, not the correctly rounded one.
"""
from verifier.spec import FLOAT_IO, Expectations, TritonKernel, dtypes, max_row, register_resident

# MAX_N of the one-block modules: their launchers raise past it, so a spec that accepts more gets a refusal finding.
ONE_BLOCK_MAX_N = 65536


def _one_block(instead=None):
    return max_row(ONE_BLOCK_MAX_N, instead, what="the one-block limit")


# Each row is reduced by one program in a fixed order: same input, same bits.
# Resources measured on an H200 (triton 3.6): the one-block kernels use no local memory up to
# N = 8192 but spill at N = 65536 (104 to 3504 local bytes), so they promise nothing about spills;
# the online softmax's tile is capped at 4096 columns and used 0 local bytes at every N tried.
_DET = Expectations(deterministic=True)

KERNELS = [
    TritonKernel(
        name="triton-softmax", op="softmax", module="softmax.py", launcher="launch", dtypes=FLOAT_IO,
        math_mode="triton_approx", supports=_one_block("triton-online-softmax"), expectations=_DET,
        description="one program per row, whole row in one block, masked loads with -inf",
    ),
    TritonKernel(
        name="triton-online-softmax", op="softmax", module="online_softmax.py", launcher="launch", dtypes=FLOAT_IO,
        math_mode="triton_approx", expectations=register_resident(),
        description="one program per row, tiled over columns: running (max, sum) with rescale, then normalize",
    ),
    TritonKernel(
        name="triton-rmsnorm", op="rmsnorm", module="rmsnorm.py", launcher="launch", dtypes=FLOAT_IO,
        math_mode="triton_approx", supports=_one_block(), expectations=_DET,
        description="one program per row, rsqrt(mean(x^2) + eps)",
    ),
    TritonKernel(
        name="triton-layernorm", op="layernorm", module="layernorm.py", launcher="launch", dtypes=FLOAT_IO,
        math_mode="triton_approx", supports=_one_block(), expectations=_DET,
        description="one program per row, variance of the centred row held in registers",
    ),
    TritonKernel(
        name="triton-fused-add-rmsnorm", op="fused_add_rmsnorm", module="fused_add_rmsnorm.py", launcher="launch",
        dtypes=FLOAT_IO, math_mode="triton_approx", supports=_one_block(), expectations=_DET,
        description="residual += x in place (rounded to its dtype); y from the fp32 sum",
    ),
    # Logits in the I/O dtype, the loss in float32; labels int64 (the op's default) or int32.
    *(TritonKernel(
        name=f"triton-cross-entropy{suffix}", op="cross_entropy", module="cross_entropy.py", launcher="launch",
        dtypes=[dtypes(d.input, "f32") for d in FLOAT_IO], math_mode="triton_approx",
        params={"label_dtype": label}, online=True, expectations=_DET,
        description=f"one program per row, online max/sum over 4096-column tiles, {label} labels",
    ) for suffix, label in (("", "int64"), ("-i32", "int32"))),
]
