"""Triton softmax writing y and the row's lse (softmax_lse.py), declared with lse=True (docs/specs.md, "Softmax with
extra inputs": the optional output lse)."""
from verifier.spec import Expectations, TritonKernel, dtypes, max_row

MAX_N = 32768


# One dtype per configuration: the CPU suites run each in the Triton interpreter (the GPU run takes them all).
def _k(name, description, dts, **params):
    return TritonKernel(name=name, op="softmax", module="softmax_lse.py", launcher="launch", dtypes=dts,
                        math_mode="triton_approx",
                        params={"lse": True, "masked_rows": "zeros", "lse_nonfinite": "posinf", **params},
                        supports=max_row(MAX_N, what="the register-resident one-block limit"),
                        expectations=Expectations(deterministic=True), description=description)


KERNELS = [
    _k("triton-softmax-lse", "scale 0.125, a per-row additive mask, causal; lse in base e (+inf where nothing is "
       "live, as FlashAttention)", [dtypes("f32")], scale=0.125, mask="MxN", causal=True),
    _k("triton-softmax-lse-sinks-base2", "one sink per row (in the denominator and the lse), lse in base 2 "
       "(FlashInfer's log2-sum-exp2)", [dtypes("bf16")], sinks=True, lse_base="2"),
]
