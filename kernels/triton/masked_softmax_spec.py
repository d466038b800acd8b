"""Triton softmax with attention's score transforms (masked_softmax.py), declared per configuration: each kernel
is one set of the softmax op's params (docs/specs.md, "Softmax with extra inputs")."""
from verifier.spec import Expectations, TritonKernel, dtypes, max_row

MAX_N = 32768
F32, BF16, F16 = dtypes("f32"), dtypes("bf16"), dtypes("f16")


# Few dtypes per configuration: the CPU suites run each in the Triton interpreter (the GPU run takes all three).
def _k(name, description, dts, **params):
    return TritonKernel(name=name, op="softmax", module="masked_softmax.py", launcher="launch", dtypes=dts,
                        math_mode="triton_approx", params={"masked_rows": "zeros", **params},
                        supports=max_row(MAX_N, what="the register-resident one-block limit"),
                        expectations=Expectations(deterministic=True), description=description)


KERNELS = [
    _k("triton-masked-softmax", "scale 0.125, a per-row additive mask, causal: one program per row",
       [F32, BF16], scale=0.125, mask="MxN", causal=True),
    _k("triton-masked-softmax-bcast-softcap", "scale 0.0883883, a mask[N] for every row, softcap 30",
       [F16], scale=0.08838834764831845, mask="N", softcap=30.0),
    _k("triton-masked-softmax-alibi-sinks", "causal (bottom-right, offset 3), ALiBi slopes, one sink per row",
       [BF16], causal=True, causal_offset=3, alibi_slopes=True, sinks=True),
]
