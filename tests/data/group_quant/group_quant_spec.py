"""Per-token-group quantizers written from scratch as vLLM's and SGLang's per_token_group_quant compute them (one
float32 scale per group of group_size elements of a row; tests/test_group_quant.py): the group's amax / qmax,
then x·(1/scale) (SGLang's row-major kernel) or x / scale (vLLM's), the scales
written column-major and copied (the col-major kernels' layout), int8 by torch.round, power-of-two (ue8m0) scales
rounded up; and three defects: the row's amax for every group, group g quantized with group g+1's scale, and ue8m0
scales rounded down (the group's largest values saturate)."""
import torch

from verifier.spec import CallableKernel, dtypes

QMAX = {"float8_e4m3fn": 448.0, "int8": 127.0}


def _scales(x, params, dt):
    M, N = x.shape
    G = params["group_size"]
    return x.view(M, N // G, G).abs().amax(-1).clamp_min(params["floor"]) / QMAX[dt.output]


def _store(v, outputs, dt):
    q = QMAX[dt.output]
    v = v.clamp(-q, q)
    outputs["y"].copy_(torch.round(v) if dt.output == "int8" else v)


def reciprocal(inputs, outputs, params, dt):  # x·(1/scale), scales written column-major then copied
    x = inputs["x"].float()
    M, N = x.shape
    s = _scales(x, params, dt)
    col = torch.empty(s.shape[1], M).t()  # [M, groups] over a column-major buffer
    col.copy_(s)
    outputs["scale"].copy_(col)
    inv = (1.0 / s).repeat_interleave(params["group_size"], dim=1)
    _store(x * inv, outputs, dt)


def divide(inputs, outputs, params, dt):  # x / scale
    x = inputs["x"].float()
    s = _scales(x, params, dt)
    outputs["scale"].copy_(s)
    _store(x / s.repeat_interleave(params["group_size"], dim=1), outputs, dt)


def row_scale(inputs, outputs, params, dt):  # the defect: the row's amax for every group
    x = inputs["x"].float()
    s = x.abs().amax(-1, keepdim=True).clamp_min(params["floor"]) / QMAX[dt.output]
    outputs["scale"].copy_(s.expand(outputs["scale"].shape))
    _store(x / s, outputs, dt)


def shifted(inputs, outputs, params, dt):  # the defect: group g divided by group g+1's scale (an index off by one)
    x = inputs["x"].float()
    s = _scales(x, params, dt)
    outputs["scale"].copy_(s)
    _store(x / torch.roll(s, -1, dims=1).repeat_interleave(params["group_size"], dim=1), outputs, dt)


def packed_scales(inputs, outputs, params, dt):  # the defect: scales written row after row, ignoring scale's stride
    x = inputs["x"].float()
    s = _scales(x, params, dt)
    out = outputs["scale"]
    out.as_strided((out.numel(),), (1,)).copy_(s.flatten())
    _store(x / s.repeat_interleave(params["group_size"], dim=1), outputs, dt)


def _pow2(up):
    def fn(inputs, outputs, params, dt):  # ue8m0 scales: 2^ceil(log2(amax / qmax)); the defect rounds them down
        x = inputs["x"].float()
        lg = torch.log2(_scales(x, params, dt))
        s = torch.exp2(torch.ceil(lg) if up else torch.floor(lg))
        outputs["scale"].copy_(s)
        _store(x / s.repeat_interleave(params["group_size"], dim=1), outputs, dt)
    return fn


KERNELS = [
    CallableKernel(name="ptgq-reciprocal-colmajor", op="per_token_group_quant", fn=reciprocal,
                   dtypes=[dtypes("bf16", "e4m3")]),
    CallableKernel(name="ptgq-divide-g64-int8", op="per_token_group_quant", fn=divide, dtypes=[dtypes("f32", "int8")],
                   params={"group_size": 64}),
    CallableKernel(name="ptgq-ue8m0", op="per_token_group_quant", fn=_pow2(True), dtypes=[dtypes("bf16", "e4m3")],
                   params={"ue8m0": True}),
    CallableKernel(name="ptgq-ue8m0-rounded-down", op="per_token_group_quant", fn=_pow2(False),
                   dtypes=[dtypes("bf16", "e4m3")], params={"ue8m0": True}),
    CallableKernel(name="ptgq-packed-scales", op="per_token_group_quant", fn=packed_scales,
                   dtypes=[dtypes("bf16", "e4m3")]),
    CallableKernel(name="ptgq-row-scale", op="per_token_group_quant", fn=row_scale, dtypes=[dtypes("bf16", "e4m3")]),
    CallableKernel(name="ptgq-shifted-scale", op="per_token_group_quant", fn=shifted, dtypes=[dtypes("bf16", "e4m3")]),
]
