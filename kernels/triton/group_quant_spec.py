"""Triton per-token-group quantizer (kernels/triton/group_quant.py): one program per row, a tile of groups at a time,
scales [M, N/G] (rows at scale's stride),
fp8 e4m3 and int8, group_size 128 (the op's default) and a UE8M0 (power-of-two scale) variant."""
from verifier.spec import Expectations, TritonKernel, dtypes

_RESIDENT = Expectations(deterministic=True, max_spill_bytes=0, max_stack_bytes=0)

KERNELS = [
    TritonKernel(name="triton-per-token-group-quant", op="per_token_group_quant", module="group_quant.py",
                 launcher="launch_group_quant", dtypes=(dtypes("bf16", "e4m3"), dtypes("f32", "int8")),
                 math_mode="triton_approx", expectations=_RESIDENT,
                 description="one program per row, groups of 128 in tiles: amax, scale = max(amax, floor) / qmax, x / scale rounded "
                             "to nearest-even and saturated"),
    TritonKernel(name="triton-per-token-group-quant-ue8m0", op="per_token_group_quant", module="group_quant.py",
                 launcher="launch_group_quant", dtypes=(dtypes("bf16", "e4m3"),), params={"ue8m0": True},
                 math_mode="triton_approx", expectations=_RESIDENT,
                 description="as triton-per-token-group-quant with the scale rounded up to a power of two from its "
                             "float32 bits (UE8M0)"),
]
