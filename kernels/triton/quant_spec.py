"""Triton quantizing kernels (kernels/triton/quant.py): per_token_quant, rmsnorm_quant, rmsnorm_dynamic_quant and
fused_add_rmsnorm_quant to fp8 e4m3 / e5m2 and int8, one program per row, the row in registers."""
from verifier.spec import Expectations, TritonKernel, dtypes, max_row

# Three variants (each format once; the CUDA kernels add f16 -> e4m3 and bf16 -> int8): the CPU suites run these in
# the interpreter, at about 2 s of CPU per variant.
QUANT_IO = (dtypes("bf16", "e4m3"), dtypes("bf16", "e5m2"), dtypes("f32", "int8"))
QUANT_IO_FUSED = (dtypes("bf16", "e4m3"),)  # the fused variants: CPU suite time; the CUDA ones have every variant
_RESIDENT = Expectations(deterministic=True, max_spill_bytes=0, max_stack_bytes=0)
_ONE_BLOCK = max_row(16384, what="the register-resident one-block limit (longer rows spill to local memory)")

KERNELS = [
    TritonKernel(
        name="triton-per-token-quant", op="per_token_quant", module="quant.py", launcher="launch_per_token_quant",
        dtypes=(dtypes("bf16", "e4m3"), dtypes("f32", "int8")), math_mode="triton_approx", supports=_ONE_BLOCK, expectations=_RESIDENT,
        description="one program per row: amax, scale = max(amax, floor) / qmax, clamp, round to nearest-even",
    ),
    TritonKernel(
        name="triton-rmsnorm-quant", op="rmsnorm_quant", module="quant.py", launcher="launch_rmsnorm_quant",
        dtypes=QUANT_IO, math_mode="triton_approx", supports=_ONE_BLOCK, expectations=_RESIDENT,
        description="one program per row: rsqrt(mean(x^2) + eps)·w·(1/scale), clamp, round to nearest-even",
    ),
    TritonKernel(
        name="triton-rmsnorm-dynamic-quant", op="rmsnorm_dynamic_quant", module="quant.py",
        launcher="launch_rmsnorm_dynamic_quant", dtypes=QUANT_IO_FUSED, math_mode="triton_approx", supports=_ONE_BLOCK,
        expectations=_RESIDENT,
        description="one program per row: n = x·rsqrt(mean(x^2) + eps)·w, its amax, scale, n / scale quantized",
    ),
    TritonKernel(
        name="triton-fused-add-rmsnorm-quant", op="fused_add_rmsnorm_quant", module="quant.py",
        launcher="launch_fused_add_rmsnorm_quant", dtypes=QUANT_IO_FUSED, math_mode="triton_approx", supports=_ONE_BLOCK,
        expectations=_RESIDENT,
        description="one program per row: residual += x (stored rounded), the float32 sum normalized and quantized",
    ),
]
