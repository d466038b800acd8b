"""Fused RMSNorm + quantization as vLLM's CUDA kernels compute it (written here from scratch): x·rsqrt stored in
the input dtype, then multiplied by the weight in that dtype (``static_cast<scalar_t>(x * rms) * weight[i]``, a
bf16 product: two roundings of the normalized value), a dynamic scale max(amax / qmax, 1 / (qmax·512)) (the
minimum scaling factor: floor = 1/512) or a static one, and x / scale (or x·(1/scale)) clamped and converted.
Declared ``round_normed=True``, both are correct; one takes its dynamic scale from the amax before the
weight, a defect the declared budget still catches (tests/test_prod_quant.py)."""
import torch

from verifier.spec import CallableKernel, Contracts, dtypes

F32 = torch.float32


def _normed(inputs, params):
    x = inputs["x"]
    xf = x.to(F32)
    r = torch.rsqrt((xf * xf).sum(-1, keepdim=True) / x.shape[1] + params["eps"])
    return ((xf * r).to(x.dtype) * inputs["w"]).to(F32)  # the product in the input dtype


def _cvt(v, out):
    if out.dtype == torch.int8:
        return torch.round(v).clamp(-127, 127).to(torch.int8)
    return v.clamp(-448.0, 448.0).to(out.dtype)


def dynamic(inputs, outputs, params, dt):
    n = _normed(inputs, params)
    qmax = 127.0 if dt.output == "int8" else 448.0
    s = torch.maximum(n.abs().amax(-1) / qmax, torch.tensor(1.0 / (qmax * 512.0), dtype=F32))
    outputs["scale"].copy_(s)
    outputs["y"].copy_(_cvt(n / s[:, None], outputs["y"]))


def amax_before_weight(inputs, outputs, params, dt):  # the defect: the scale from x·rsqrt's amax, before the weight
    x = inputs["x"].to(F32)
    r = torch.rsqrt((x * x).sum(-1, keepdim=True) / x.shape[1] + params["eps"])
    qmax = 127.0 if dt.output == "int8" else 448.0
    s = torch.maximum((x * r).abs().amax(-1) / qmax, torch.tensor(1.0 / (qmax * 512.0), dtype=F32))
    outputs["scale"].copy_(s)
    outputs["y"].copy_(_cvt(_normed(inputs, params) / s[:, None], outputs["y"]))


def static(inputs, outputs, params, dt):
    inv = 1.0 / inputs["scale"].to(F32)
    outputs["y"].copy_(_cvt(_normed(inputs, params) * inv, outputs["y"]))


_IO = [dtypes("bf16", "e4m3"), dtypes("bf16", "int8")]  # one variant each: CPU suite time
_C = Contracts(nan_inputs="unsupported")  # the model's amax is torch's; the CUDA one's fmaxf drops NaN
KERNELS = [
    CallableKernel(name="rms-dyn-quant-bf16-product", op="rmsnorm_dynamic_quant", fn=dynamic, dtypes=_IO[:1],
                   params={"round_normed": True, "floor": 1 / 512}, contracts=_C),
    CallableKernel(name="rms-dyn-quant-amax-before-weight", op="rmsnorm_dynamic_quant", fn=amax_before_weight,
                   dtypes=_IO[:1], params={"round_normed": True, "floor": 1 / 512}, contracts=_C),
    CallableKernel(name="rms-quant-bf16-product", op="rmsnorm_quant", fn=static, dtypes=_IO[1:],
                   params={"round_normed": True}, contracts=_C),
]
