"""Triton reduction kernels under test: one program per row, fp32 math, fp32/fp16/bf16 I/O.

math_mode 'triton_approx': Triton lowers fp32 exp to ex2.approx (after a multiply by log2 e),
fp32 '/' to div.full.f32 and rsqrt to rsqrt.approx, so these kernels are held to the
approximate-math tolerance column, not the correctly rounded one.
"""
from verifier.spec import FLOAT_IO, Expectations, TritonKernel, dtypes, max_row, register_resident

# MAX_N of the one-block modules: their launchers raise past it, so a spec that accepts more gets a refusal finding.
# The whole row is held in registers; the limits are where it still fits. Measured on sm_90 (ptxas -v on the PTX
# Triton 3.6 emits, N a multiple of 16 and not, f32 / f16 / bf16: benchmarks/triton_spills.py; the H200 reported
# the same bytes for N = 65536): softmax uses no local memory up to N = 32768 (16 warps) and 256-440 bytes at
# 65536; RMSNorm and fused add + RMSNorm none up to 16384 (32 warps at BLOCK = 16384; 16 warps spilled 32 bytes
# there when N is not a multiple of 16) and 8-1696 bytes at 32768; LayerNorm (the row and its centred copy) none
# up to 8192 and 24 bytes at N = 16383 in f32 even with 32 warps. So they refuse longer rows rather than spill, and
# declare register_resident(): local memory at a supported N is a resources error.
SOFTMAX_MAX_N = 32768
NORM_MAX_N = 16384
LAYERNORM_MAX_N = 8192
SPILLS = "the register-resident one-block limit (longer rows spill to local memory)"


def _one_block(limit, instead=None):
    return max_row(limit, instead, what=SPILLS)


# Each row is reduced by one program in a fixed order: same input, same bits.
# The online softmax's tile is capped at 4096 columns and used 0 local bytes at every N tried.
_DET = Expectations(deterministic=True)
_RESIDENT = Expectations(deterministic=True, max_spill_bytes=0, max_stack_bytes=0)

KERNELS = [
    TritonKernel(
        name="triton-softmax", op="softmax", module="softmax.py", launcher="launch", dtypes=FLOAT_IO,
        math_mode="triton_approx", supports=_one_block(SOFTMAX_MAX_N, "triton-online-softmax"),
        expectations=_RESIDENT,
        description="one program per row, whole row in one block, masked loads with -inf",
    ),
    TritonKernel(
        name="triton-online-softmax", op="softmax", module="online_softmax.py", launcher="launch", dtypes=FLOAT_IO,
        math_mode="triton_approx", expectations=register_resident(),
        description="one program per row, tiled over columns: running (max, sum) with rescale, then normalize",
    ),
    TritonKernel(
        name="triton-rmsnorm", op="rmsnorm", module="rmsnorm.py", launcher="launch", dtypes=FLOAT_IO,
        math_mode="triton_approx", supports=_one_block(NORM_MAX_N), expectations=_RESIDENT,
        description="one program per row, rsqrt(mean(x^2) + eps)",
    ),
    TritonKernel(
        name="triton-layernorm", op="layernorm", module="layernorm.py", launcher="launch", dtypes=FLOAT_IO,
        math_mode="triton_approx", supports=_one_block(LAYERNORM_MAX_N), expectations=_RESIDENT,
        description="one program per row, variance of the centred row held in registers",
    ),
    TritonKernel(
        name="triton-fused-add-rmsnorm", op="fused_add_rmsnorm", module="fused_add_rmsnorm.py", launcher="launch",
        dtypes=FLOAT_IO, math_mode="triton_approx", supports=_one_block(NORM_MAX_N), expectations=_RESIDENT,
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
