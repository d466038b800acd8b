"""Per-token fp8 quantizers without a floor (declared ``floor=0``), written from scratch after SGLang's CUDA
per_token_quant_fp8: scale = amax / 448, a zero row gets scale 0. One guards the reciprocal (scale_inv = 0 when the
scale is 0: y = 0); one takes 1 / 0 = inf, and 0·inf = NaN clamps to 448 (y = 448 for x = 0: 448·0 dequantizes to
0, harmless); one lets that NaN through to the fp8 output (a defect: NaN·0 is NaN in the GEMM).
tests/test_prod_quant.py."""
import torch

from verifier.spec import CallableKernel, Contracts, dtypes

F32 = torch.float32


def _ptq(guard, clamp_nan=True):
    def fn(inputs, outputs, params, dt):
        x = inputs["x"].to(F32)
        s = x.abs().amax(-1) / 448.0
        inv = 1.0 / s
        if guard:
            inv = torch.where(s == 0, torch.zeros_like(s), inv)
        outputs["scale"].copy_(s)
        v = x * inv[:, None]
        if clamp_nan:
            v = torch.nan_to_num(v, nan=448.0)  # fmaxf(fminf(NaN, 448), -448) = 448
        outputs["y"].copy_(v.clamp(-448.0, 448.0))
    return fn


_COMMON = dict(op="per_token_quant", dtypes=[dtypes("bf16", "e4m3")], params={"floor": 0.0},
               contracts=Contracts(nan_inputs="unsupported"))
KERNELS = [
    CallableKernel(name="ptq-zero-scale-guarded", fn=_ptq(True), **_COMMON),
    CallableKernel(name="ptq-zero-scale-inf", fn=_ptq(False), **_COMMON),
    CallableKernel(name="ptq-zero-scale-nan", fn=_ptq(False, clamp_nan=False), **_COMMON),
]
