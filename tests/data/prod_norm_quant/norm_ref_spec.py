"""Ops of a user's own whose references call F.layer_norm and F.rms_norm (tests/test_prod_norm_quant.py): a layer norm
with a weight and no bias (nn.LayerNorm(bias=False)) and a gated RMSNorm (docs/specs.md's example), each with a
correct torch kernel and a defect: the weight-only layer norm without its weight, the gate applied before the norm."""
import torch
import torch.nn.functional as F

from verifier.spec import CallableKernel, Op, dtypes

LN_W = Op("ln_weight_only", inputs={"x": "MxN", "w": "N"}, outputs={"y": "MxN"}, params={"eps": 1e-5},
          reference=lambda i, p: {"y": F.layer_norm(i["x"], i["x"].shape[-1:], i["w"], None, p["eps"])})
GATED = Op("rms_gated", inputs={"x": "MxN", "z": "MxN", "w": "N"}, outputs={"y": "MxN"}, params={"eps": 1e-6},
           reference=lambda i, p: {"y": F.rms_norm(i["x"], i["x"].shape[-1:], i["w"], p["eps"]) * i["z"]
                                   * torch.sigmoid(i["z"])})


def ln_w(inputs, outputs, params, dt):
    x = inputs["x"].float()
    return {"y": F.layer_norm(x, x.shape[-1:], inputs["w"].float(), None, params["eps"]).to(x.dtype)}


def ln_no_weight(inputs, outputs, params, dt):
    x = inputs["x"].float()
    return {"y": F.layer_norm(x, x.shape[-1:], None, None, params["eps"])}


def gated(inputs, outputs, params, dt):
    x, z = inputs["x"].float(), inputs["z"].float()
    return {"y": F.rms_norm(x, x.shape[-1:], inputs["w"].float(), params["eps"]) * z * torch.sigmoid(z)}


def gated_before(inputs, outputs, params, dt):  # the gate applied before the norm (another op)
    x, z = inputs["x"].float(), inputs["z"].float()
    return {"y": F.rms_norm(x * z * torch.sigmoid(z), x.shape[-1:], inputs["w"].float(), params["eps"])}


_C = dict(device="cpu", dtypes=[dtypes("f32")])
KERNELS = [
    CallableKernel(name="ln-weight-only", op=LN_W, fn=ln_w, **_C),
    CallableKernel(name="ln-weight-only-dropped", op=LN_W, fn=ln_no_weight, **_C),
    CallableKernel(name="rms-gated", op=GATED, fn=gated, **_C),
    CallableKernel(name="rms-gated-before", op=GATED, fn=gated_before, **_C),
]
