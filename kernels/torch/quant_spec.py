"""The unfused torch compositions of the quantizing ops (the baseline `verifier bench` puts beside the fused
kernels): per_token_quant as amax, divide, clamp, cast; rmsnorm_quant as F.rms_norm in the I/O dtype (its y rounded
there: declared round_normed=True), then the static scale, clamp, cast. int8 through torch.round (nearest-even)."""
import torch
import torch.nn.functional as F

from verifier.spec import CallableKernel, dtypes

QUANT_IO = (dtypes("bf16", "e4m3"), dtypes("bf16", "int8"))  # the bench baseline; e5m2 is the same composition
QMAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "int8": 127.0}


def _quantize(t, dt):
    qmax = QMAX[dt.output]
    t = t.clamp(-qmax, qmax)
    return (torch.round(t) if dt.output == "int8" else t).to(getattr(torch, dt.output))


def _per_token_quant(inputs, outputs, params, dt):
    x = inputs["x"].float()
    s = x.abs().amax(-1).clamp(min=params["floor"]) / QMAX[dt.output]
    return {"y": _quantize(x / s[:, None], dt), "scale": s}


def _rmsnorm_quant(inputs, outputs, params, dt):
    x = inputs["x"]
    y = F.rms_norm(x, (x.shape[-1],), inputs["w"], eps=params["eps"])
    return {"y": _quantize(y.float() * (1.0 / inputs["scale"].float()), dt)}


KERNELS = [
    CallableKernel(name="torch-per-token-quant", op="per_token_quant", fn=_per_token_quant, dtypes=QUANT_IO,
                   description="x.abs().amax(-1).clamp(min=floor) / qmax; (x / scale).clamp(-qmax, qmax).to(q)"),
    CallableKernel(name="torch-rmsnorm-quant", op="rmsnorm_quant", fn=_rmsnorm_quant, dtypes=QUANT_IO,
                   params={"round_normed": True},
                   description="F.rms_norm in the I/O dtype, then * (1 / scale), clamp, .to(q): the unfused pair"),
]
