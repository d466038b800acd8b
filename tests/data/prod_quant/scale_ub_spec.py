"""Dynamic per-token fp8 quantization with an upper bound on the amax, as vLLM's CUDA quantizers take one
(``scale_ub``: token_scale = max(min(amax, ub) / qmax, 1 / (qmax·512)), then x / scale clamped; rows past the bound
saturate), written here from scratch: declared ``scale_ub`` it passes, undeclared it fails (tests/test_prod_quant.py)."""
import torch

from verifier.spec import CallableKernel, Contracts, dtypes

UB = 30.0  # the mixed_magnitudes case has rows of amax ~3e3 (capped) and ~3 (not)


def capped(inputs, outputs, params, dt):
    x = inputs["x"].float()
    amax = torch.clamp(x.abs().amax(-1), max=UB)
    s = torch.maximum(amax / 448.0, torch.tensor(1.0 / (448.0 * 512.0)))
    outputs["scale"].copy_(s)
    outputs["y"].copy_((x / s[:, None]).clamp(-448.0, 448.0))


_COMMON = dict(op="per_token_quant", fn=capped, dtypes=[dtypes("f32", "e4m3")],
               contracts=Contracts(nan_inputs="unsupported"))
KERNELS = [
    CallableKernel(name="ptq-scale-ub", params={"scale_ub": UB, "floor": 1 / 512}, **_COMMON),
    CallableKernel(name="ptq-scale-ub-undeclared", params={"floor": 1 / 512}, **_COMMON),
]
