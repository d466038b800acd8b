"""row_amax: x[M,N] -> y[M] = max_j |x[r, j]|, torch.amax(x.abs(), dim=-1).

Exact: every |x_j| is an input value, so the maximum is one of them and a correct kernel returns it bit for bit
(budget 0 ULPs; an output dtype narrower than the input rounds it once, correctly). Special values as torch.amax:
a NaN anywhere in the row gives NaN (fmaxf / fmax would drop it and report the largest number: a silent wrong
scale for an fp8 quantizer), ±inf gives +inf, an all-zero row (or -0) gives +0.
"""
from __future__ import annotations

import numpy as np

from verifier.ops.model import Op, OpCase
from verifier.ops.online_softmax_stats import k_exact
from verifier.ops.samplers import fit as _fit


def reference(inputs, params):
    return {"y": inputs["x"].abs().amax(dim=-1)}


def _specials(rng):
    """N(0,1) rows with the row's largest |x| negative, and, by row mod 4: a NaN at the last column (past every
    vector and warp boundary), a NaN at column 0 (where a max started from x[0] keeps it or not), -inf, +inf and a
    NaN in the same row (NaN wins)."""
    def fn(shape, dtype):
        M, N = shape
        v = rng.standard_normal(shape)
        v[:, N // 2] = -8.0  # the abs-max is negative: a kernel missing abs returns the second largest
        for i in range(M):
            kind = i % 4
            if kind == 0:
                v[i, N - 1] = np.nan
            elif kind == 1:
                v[i, 0] = np.nan
            elif kind == 2:
                v[i, rng.integers(N)] = -np.inf
            else:
                v[i, 0], v[i, N - 1] = np.inf, np.nan
        return _fit(v, dtype)
    return fn


def _negative_max(rng):
    """Rows whose abs-max is a negative element well below every positive one (N(0,1), one element -8)."""
    def fn(shape, dtype):
        v = rng.standard_normal(shape)
        v[np.arange(shape[0]), rng.integers(shape[1], size=shape[0])] = -8.0
        return _fit(v, dtype)
    return fn


def _has_nan_inf(dt):
    return dt in ("float32", "float16", "bfloat16", "float64")


CASES = (
    OpCase("amax_nan_inf_rows", "NaN at the last or first column, -inf, +inf with NaN, the abs-max negative: NaN "
           "must win (torch.amax), -inf must give +inf", 8, 1029, _specials, dtype_ok=_has_nan_inf, quick=True),
    OpCase("amax_negative_max", "the abs-max is a negative element (-8) in N(0,1) rows: a max without abs misses "
           "it", 4, 1000, _negative_max),
)

OPDEF = Op(
    "row_amax", inputs={"x": "MxN"}, outputs={"y": "M"}, reference=reference,
    recipe={"y": (0.0, "exact")}, kappas={"exact": k_exact}, cases=CASES,
    description="y[r] = max_j |x[r, j]|, NaN propagating as torch.amax",
)
