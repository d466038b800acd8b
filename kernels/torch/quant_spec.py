"""The unfused torch compositions of the quantizing ops (the baseline `verifier bench` puts beside the fused
kernels): per_token_quant as amax, divide, clamp, cast; rmsnorm_quant as F.rms_norm in the I/O dtype (its y rounded
there: declared round_normed=True), then the static scale, clamp, cast. int8 through torch.round (nearest-even)."""
import torch
import torch.nn.functional as F

from torch_norm_limits import below_2pow32
from verifier.spec import CallableKernel, dtypes

# The bench baseline, in the variants the fused kernels are benched in (e5m2 is the same composition); each variant
# costs the CPU suites seconds of reference and budget on the long-row cases, so the norm ops keep one.
QUANT_IO = (dtypes("bf16", "e4m3"), dtypes("bf16", "int8"))
NORM_IO = (dtypes("bf16", "e4m3"),)
QMAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "int8": 127.0}


def _quantize(t, dt):
    qmax = QMAX[dt.output]
    t = t.clamp(-qmax, qmax)
    return (torch.round(t) if dt.output == "int8" else t).to(getattr(torch, dt.output))


def _per_token_quant(inputs, outputs, params, dt):
    x = inputs["x"].float()
    s = x.abs().amax(-1).clamp(min=params["floor"]) / QMAX[dt.output]
    return {"y": _quantize(x / s[:, None], dt), "scale": s}


def _rmsnorm_dynamic_quant(inputs, outputs, params, dt):
    x = inputs["x"]
    n = F.rms_norm(x, (x.shape[-1],), inputs["w"], eps=params["eps"]).float()
    s = n.abs().amax(-1).clamp(min=params["floor"]) / QMAX[dt.output]
    return {"y": _quantize(n / s[:, None], dt), "scale": s}


def _fused_add_rmsnorm_quant(inputs, outputs, params, dt):
    h = inputs["x"] + inputs["residual"]  # in the I/O dtype, as an unfused x + residual is
    outputs["residual"].copy_(h)
    y = F.rms_norm(h, (h.shape[-1],), inputs["w"], eps=params["eps"])
    outputs["y"].copy_(_quantize(y.float() * (1.0 / inputs["scale"].float()), dt))


def _rmsnorm_quant(inputs, outputs, params, dt):
    x = inputs["x"]
    y = F.rms_norm(x, (x.shape[-1],), inputs["w"], eps=params["eps"])
    return {"y": _quantize(y.float() * (1.0 / inputs["scale"].float()), dt)}


KERNELS = [
    CallableKernel(name="torch-per-token-quant", op="per_token_quant", fn=_per_token_quant, dtypes=QUANT_IO,
                   description="x.abs().amax(-1).clamp(min=floor) / qmax; (x / scale).clamp(-qmax, qmax).to(q)"),
    CallableKernel(name="torch-rmsnorm-quant", op="rmsnorm_quant", fn=_rmsnorm_quant, dtypes=NORM_IO,
                   params={"round_normed": True}, supports=below_2pow32,
                   description="F.rms_norm in the I/O dtype, then * (1 / scale), clamp, .to(q): the unfused pair"),
    CallableKernel(name="torch-rmsnorm-dynamic-quant", op="rmsnorm_dynamic_quant", fn=_rmsnorm_dynamic_quant,
                   dtypes=NORM_IO, params={"round_normed": True}, supports=below_2pow32,
                   description="F.rms_norm in the I/O dtype, its amax, scale, (n / scale).clamp().to(q)"),
    CallableKernel(name="torch-fused-add-rmsnorm-quant", op="fused_add_rmsnorm_quant", fn=_fused_add_rmsnorm_quant,
                   dtypes=NORM_IO, params={"round_normed": True}, supports=below_2pow32,
                   description="x + residual in the I/O dtype (stored), F.rms_norm, * (1 / scale), .to(q)"),
]
