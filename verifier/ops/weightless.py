"""The weightless norm variants (issue #37): rmsnorm and layernorm whose kernel takes no weight (elementwise_affine
without weight, as torch's F.rms_norm(x, (N,), None) / F.layer_norm(x, (N,), None, b)), declared as ops of their
own so that the bundled ``rmsnorm`` / ``layernorm`` (and every kernel declared on them) stay as they are:

- ``rmsnorm_noweight``: x[M,N] -> y[M,N] = x / sqrt(mean(x²) + eps); eps=1e-6;
- ``layernorm_noweight``: x[M,N] -> y[M,N] = (x - mean)/sqrt(var + eps); eps=1e-5;
- ``layernorm_bias``: x[M,N], b[N] -> y[M,N] = (x - mean)/sqrt(var + eps) + b; eps=1e-5.

Budgets and invariants: the hand models of rmsnorm / layernorm with w = 1 (and b = 0), the factor 1 exact.
"""
from __future__ import annotations

import numpy as np

from verifier.ops.layernorm import check_layernorm, k_layernorm
from verifier.ops.model import Op, Tensor
from verifier.ops.rmsnorm import check_rms, k_rmsnorm


def _wb(x, xs):
    N = x.shape[-1]
    return np.ones(N), (xs["b"] if "b" in xs else np.zeros(N))


def k_layernorm_weightless(x, y, p, c, xs):
    w, b = _wb(x, xs)
    return k_layernorm(x, y, p, c, {"w": w, "b": b})


def check_ln(x_raw, inp, ys, p, dt, c):
    w, b = _wb(inp["x"], inp)
    return check_layernorm(inp["x"], w, b, ys["y"], p["eps"], c)


def check_rms_noweight(x_raw, inp, ys, p, dt, c):
    return check_rms("rmsnorm_noweight", inp["x"], np.ones(inp["x"].shape[-1]), ys["y"], p["eps"], c)


def _ref_rms(inputs, params):
    import torch.nn.functional as F  # here, not at import: a CUDA check child never loads torch
    x = inputs["x"]
    return {"y": F.rms_norm(x, (x.shape[-1],), None, eps=params["eps"])}


def _ref_ln(inputs, params):
    import torch.nn.functional as F  # here, not at import: a CUDA check child never loads torch
    x = inputs["x"]
    return {"y": F.layer_norm(x, (x.shape[-1],), None, inputs.get("b"), eps=params["eps"])}


RMSNORM_NOWEIGHT = Op(
    "rmsnorm_noweight", inputs={"x": "MxN"}, outputs={"y": "MxN"}, params={"eps": 1e-6}, reference=_ref_rms,
    recipe={"y": (1.0, "rmsnorm")}, kappas={"rmsnorm": k_rmsnorm}, invariants=check_rms_noweight,
    description="F.rms_norm(x, (N,), None, eps): no weight",
)
LAYERNORM_NOWEIGHT = Op(
    "layernorm_noweight", inputs={"x": "MxN"}, outputs={"y": "MxN"}, params={"eps": 1e-5}, reference=_ref_ln,
    recipe={"y": (1.0, "layernorm")}, kappas={"layernorm": k_layernorm_weightless}, invariants=check_ln,
    description="F.layer_norm(x, (N,), None, None, eps): no weight, no bias",
)
LAYERNORM_BIAS = Op(
    "layernorm_bias", inputs={"x": "MxN", "b": Tensor("N", "bias")}, outputs={"y": "MxN"}, params={"eps": 1e-5},
    reference=_ref_ln, recipe={"y": (1.0, "layernorm")}, kappas={"layernorm": k_layernorm_weightless},
    invariants=check_ln, description="F.layer_norm(x, (N,), None, b, eps): a bias, no weight",
)
