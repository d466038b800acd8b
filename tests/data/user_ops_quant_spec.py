"""Ops with outputs in their own dtype: a per-token fp8 quantization (y in the variant's e4m3 output, scale[M] in
float32) and a row argmax (int64 indices, compared exactly), each with a correct and a buggy torch callable
(tests/test_user_ops.py)."""
import torch
from verifier.spec import CallableKernel, Dtypes, Op, Tensor, dtypes

def ptq_ref(i, p):
    x = i["x"]
    scale = torch.clamp(x.abs().amax(-1), min=p["floor"]) / 448.0
    return {"y": x / scale[:, None], "scale": scale}

PTQ = Op("user_token_quant", inputs={"x": "MxN"}, outputs={"y": "MxN", "scale": Tensor("M", dtype="float32")},
         params={"floor": 1e-10}, reference=ptq_ref)
ARGMAX = Op("user_row_argmax", inputs={"x": "MxN"}, outputs={"i": Tensor("M", dtype="int64")},
            reference=lambda i, p: {"i": i["x"].argmax(-1)})

def ptq(inputs, outputs, params, dt):
    x = inputs["x"].float()
    s = x.abs().amax(-1).clamp_min(params["floor"]) / 448.0
    outputs["scale"].copy_(s)
    outputs["y"].copy_((x / s[:, None]).to(outputs["y"].dtype))

def ptq_half(inputs, outputs, params, dt):   # bug: quantizes with twice the scale it writes
    x = inputs["x"].float()
    s = x.abs().amax(-1).clamp_min(params["floor"]) / 448.0
    outputs["scale"].copy_(s)
    outputs["y"].copy_((x / s[:, None] * 0.5).to(outputs["y"].dtype))

def am(inputs, outputs, params, dt):
    outputs["i"].copy_(inputs["x"].float().argmax(-1))

def am_bug(inputs, outputs, params, dt):
    outputs["i"].copy_(inputs["x"].float()[:, :-1].argmax(-1))

Q = Dtypes("bfloat16", "float8_e4m3fn", "float32")
KERNELS = [CallableKernel(name="ptq", op=PTQ, fn=ptq, dtypes=[Q]),
           CallableKernel(name="ptq-half", op=PTQ, fn=ptq_half, dtypes=[Q]),
           CallableKernel(name="argmax", op=ARGMAX, fn=am, dtypes=[dtypes("f32")]),
           CallableKernel(name="argmax-bug", op=ARGMAX, fn=am_bug, dtypes=[dtypes("f32")])]
