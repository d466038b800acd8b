"""OCP MX quantizers written from scratch (tests/test_prod_norm_quant.py): groups of 32, one power-of-two scale each.
The floor mode's scale is 2^(floor(log2 amax) - emax) (emax 8 for e4m3: the group's largest values pass 448 and
saturate), the ceil mode's DeepGEMM's 2^ceil(log2(amax / 448)); both clamp the exponent at E8M0's -127 (a zero group
gets 2^-127). Defects: the floor mode without saturation (NaN past 448, as PyTorch's eager e4m3 cast before 2.13),
and a floor-mode kernel declared as ceil (the declaration the op had before ue8m0='floor')."""
import torch

from verifier.spec import CallableKernel, dtypes


def _mx(x, floor_mode, saturate=True, zero_scale=False):
    M, N = x.shape
    g = x.float().view(M, N // 32, 32)
    amax = g.abs().amax(-1)
    if floor_mode:
        e = torch.floor(torch.log2(amax)) - 8
    else:
        e = torch.ceil(torch.log2(amax / 448.0))
    scale = torch.exp2(e.clamp(min=-127))
    if zero_scale:
        scale = torch.where(amax == 0, 0.0, scale)
    t = g / torch.where(scale == 0, 1.0, scale)[..., None]
    t = t.clamp(-448, 448) if saturate else torch.where(t.abs() > 448, float("nan"), t)
    return {"y": t.view(M, N).to(torch.float8_e4m3fn), "scale": scale}


def floor_mode(inputs, outputs, params, dt):
    return _mx(inputs["x"], True)


def floor_unsaturated(inputs, outputs, params, dt):
    return _mx(inputs["x"], True, saturate=False)


def ceil_zero_scale(inputs, outputs, params, dt):  # scales in float32: a zero group's 0 (no E8M0 byte asked)
    return _mx(inputs["x"], False, zero_scale=True)


def ceil_e8m0(inputs, outputs, params, dt):
    return _mx(inputs["x"], False)


_C = dict(device="cpu", dtypes=[dtypes("bf16", "e4m3")])
KERNELS = [
    CallableKernel(name="mx-floor", op="per_token_group_quant", fn=floor_mode,
                   params={"group_size": 32, "floor": 0.0, "ue8m0": "floor"}, **_C),
    CallableKernel(name="mx-floor-unsaturated", op="per_token_group_quant", fn=floor_unsaturated,
                   params={"group_size": 32, "floor": 0.0, "ue8m0": "floor"}, **_C),
    CallableKernel(name="mx-floor-declared-ceil", op="per_token_group_quant", fn=floor_mode,
                   params={"group_size": 32, "floor": 0.0, "ue8m0": True}, **_C),
    CallableKernel(name="mx-ceil-e8m0", op="per_token_group_quant", fn=ceil_e8m0,
                   params={"group_size": 32, "floor": 0.0, "ue8m0": True}, **_C),
    CallableKernel(name="mx-ceil-zero-scale", op="per_token_group_quant", fn=ceil_zero_scale,
                   params={"group_size": 32, "floor": 0.0, "ue8m0": True}, **_C),
]
