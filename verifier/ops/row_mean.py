"""row_mean: x[M,N] -> y[M] = mean_j x[r, j], torch.mean(x, dim=-1) accumulated in the accumulation dtype.

Budget: the any-order sum's gamma(N - 1)·Σ|x| (verifier.ops.reduce_sum.k_sum) divided by N, plus the scaling (a
division by N, or a product by 1/N rounded: 2 units of |mean|), then the output rounding (1 ULP).
"""
from __future__ import annotations

import numpy as np

from verifier.ops.model import Op
from verifier.ops.reduce_sum import k_sum


def reference(inputs, params):
    return {"y": inputs["x"].mean(dim=-1)}


def k_mean(x, y, p, c, xs):
    return k_sum(x, y, p, c, xs) / c.N + 2 * c.u * np.abs(y) + c.eta


OPDEF = Op(
    "row_mean", inputs={"x": "MxN"}, outputs={"y": "M"}, reference=reference,
    recipe={"y": (1.0, "mean")}, kappas={"mean": k_mean},
    description="y[r] = mean_j x[r, j] (torch.mean(x, -1))",
)
