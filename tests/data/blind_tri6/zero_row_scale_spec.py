"""Per-token fp8 quantizers without a floor (``floor=0``) that write a scale of 1 for an all-zero row instead of 0
(scale = amax / 448, then ``where(scale == 0, 1, scale)``, as aiter's fused RMSNorm + dynamic quant kernels do):
y = 0 there dequantizes to 0·1 = 0, exactly x, so the pair is correct; one writes y = 1 on such rows (1·1 = 1 is
not 0: a defect). tests/test_zero_row_scale.py."""
import torch

from verifier.spec import CallableKernel, dtypes


def _ptq(zero_row_y):
    def fn(inputs, outputs, params, dt):
        x = inputs["x"].float()
        s = x.abs().amax(-1) / 448.0
        s = torch.where(s == 0, torch.ones_like(s), s)
        outputs["scale"].copy_(s)
        y = (x / s[:, None]).clamp(-448.0, 448.0)
        outputs["y"].copy_(torch.where(x.abs().amax(-1, keepdim=True) == 0, zero_row_y, y))
    return fn


_COMMON = dict(op="per_token_quant", dtypes=[dtypes("bf16", "e4m3")], params={"floor": 0.0})
KERNELS = [
    CallableKernel(name="ptq-zero-row-scale-one", fn=_ptq(0.0), **_COMMON),
    CallableKernel(name="ptq-zero-row-scale-one-y-one", fn=_ptq(1.0), **_COMMON),
]
