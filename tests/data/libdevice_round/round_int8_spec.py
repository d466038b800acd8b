"""Per-token int8 quantizers that round with libdevice (as vLLM's and SGLang's Triton int8 quantizers do:
``tl.extra.cuda.libdevice.round(x).to(tl.int8)``), written here from scratch: ``round`` (ties away from zero,
declared ``rounding="half_away"``) and ``rint`` (ties to even, the default) are correct; ``trunc`` drops the
rounding. The interpreter leaves libdevice unimplemented; the verifier runs these exactly defined functions
(verifier.launch.libdevice), so their values are checked on the CPU."""
from verifier.spec import Contracts, TritonKernel, dtypes

_COMMON = dict(op="per_token_quant", module="round_int8.py", dtypes=[dtypes("f32", "int8")], math_mode="triton_approx",
               contracts=Contracts(nan_inputs="unsupported"))  # the float max drops NaN

KERNELS = [
    TritonKernel(name="int8-libdevice-round", launcher="launch_round", params={"rounding": "half_away"}, **_COMMON),
    TritonKernel(name="int8-libdevice-rint", launcher="launch_rint", **_COMMON),
    TritonKernel(name="int8-libdevice-trunc", launcher="launch_trunc", **_COMMON),
]
