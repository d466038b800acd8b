"""fused_add_rmsnorm: x[M,N], residual[M,N], w[N] -> y[M,N], residual[M,N] (updated in place):
h = x + residual is stored into residual, y = h·(offset + w) / sqrt(mean(h²) + eps); params eps=1e-6, offset=0
(offset=1: the Gemma form)."""
from __future__ import annotations

import numpy as np

from verifier import dtypes as _dt
from verifier.numerics.errmodel import gamma, mul
from verifier.numerics.ulp import ulp
from verifier.ops.model import Op, Tensor
from verifier.ops.rmsnorm import check_rms, offset_units, rms_units, rstd_of, underflow_abs, weights


def k_add_residual(x, h, p, c, xs):
    # x + residual rounded in acc, then to the residual's dtype. With both held exactly in acc (c_in = 0) that
    # is one correctly rounded sum when the dtypes are the same, and when acc has p_acc >= 2·p_res + 2 bits
    # (bf16 or f16 in fp32): double rounding of a sum is then innocuous (S. A. Figueroa, "When is double
    # rounding innocuous?", SIGNUM Newsletter 30(3), 1995). Otherwise one unit more. A sum below eta may be
    # flushed (eta is the smallest normal then; with gradual underflow the sum is exact).
    if c.c_in == 0 and (c.u == c.u_res or c.u <= c.u_res * c.u_res / 4):
        return np.where(np.abs(h) < c.eta, c.eta, 0.0)
    return gamma(1 + c.c_in, c.u) * np.abs(xs["x"] + xs["residual"]) + c.eta


def k_add_rmsnorm_y(x, y, p, c, xs):
    # h = x + residual carries 1 unit (+ input conversion). Kernels may normalise the *stored*
    # residual, rounded to the output dtype (vLLM does): that moves h_i by u_out relatively and
    # the row's rms by at most u_out, i.e. y_i by 2·u_out — allowed, as either reading is correct.
    h = xs["x"] + xs["residual"]
    k_h = 1 + c.c_in
    r_units = rms_units(h, p["eps"], c, k_h)
    k = r_units + 2 + k_h + c.c_in + 2 * c.u_res / c.u + offset_units(p)
    return mul(gamma(k, c.u), np.abs(y)) + underflow_abs(rstd_of(h, p["eps"]), weights(xs, p), c)


def check(x_raw, inp, ys, params, dtypes, c):
    # Normalize the stored residual h = round(x + residual): the kernel may have normalized the
    # unrounded sum instead, which differs by <= ulp_in(h) per element (h_abs) and moves ms by
    # 2·2u_in relatively (k_h in units of u_acc). Checking y against the stored residual also checks
    # that y and residual are consistent.
    h = ys["residual"]
    u_in = _dt.unit_roundoff(dtypes.input) if _dt.is_float(dtypes.input) else 0.0
    k_h = 1.0 + (2 * u_in / c.u if c.u else 0.0)
    h_abs = ulp(h, dtypes.input) if _dt.is_float(dtypes.input) else 0.0
    return check_rms("fused_add_rmsnorm", h, weights(inp, params), ys["y"], params["eps"], c,
                     k_h=k_h, h_abs=h_abs, consistent=True, k_w=offset_units(params))


OPDEF = Op(
    "fused_add_rmsnorm", inputs={"x": "MxN", "residual": "MxN", "w": Tensor("N", "weight")},
    outputs={"y": "MxN", "residual": "MxN"}, inouts=("residual",),
    params={"eps": 1e-6, "offset": 0.0},
    reference="references.fused_add_rmsnorm",
    recipe={"y": (1.0, "add_rmsnorm_y"), "residual": (1.0, "add_residual")},
    kappas={"add_rmsnorm_y": k_add_rmsnorm_y, "add_residual": k_add_residual},
    invariants=check,
)
