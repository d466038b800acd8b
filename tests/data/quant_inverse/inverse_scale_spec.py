"""Per-token int8 quantizers in CTranslate2's quantize_kernel form (written here from its semantics, no code of
its own): the scale output holds the inverse, s = 127 / amax (1 for an all-zero row), y = (int8)(x·s), the cast
truncating toward zero (round_before_cast=false). Declared with params={"scale_form": "inverse", "rounding":
"toward_zero", "floor": 0.0} the correct one passes; tests/test_quant_inverse_scale.py checks it undeclared and the
twins: one rounding to nearest, one writing 128 / amax (int8's -128 taken for the range)."""
import torch

from verifier.spec import CallableKernel, dtypes

DECLARED = {"scale_form": "inverse", "rounding": "toward_zero", "floor": 0.0}


def _quantize(qmax=127.0, rounded=False):
    def fn(inputs, outputs, params, dt):
        x = inputs["x"].float()
        amax = x.abs().amax(-1)
        s = torch.where(amax != 0, qmax / amax, torch.ones_like(amax))  # the inverse; 1 for an all-zero row
        outputs["scale"].copy_(s)
        v = x * s[:, None]
        if rounded:
            v = torch.round(v)
        outputs["y"].copy_(v.clamp(-127.0, 127.0).to(torch.int8))  # .to(int8) truncates toward zero
    return fn


def kernels(params=DECLARED):
    common = dict(op="per_token_quant", dtypes=[dtypes("bf16", "int8")], params=dict(params))
    return [CallableKernel(name="ptq-inverse-trunc", fn=_quantize(), **common),
            CallableKernel(name="ptq-inverse-rounded", fn=_quantize(rounded=True), **common),
            CallableKernel(name="ptq-inverse-128", fn=_quantize(qmax=128.0), **common)]


KERNELS = kernels()
