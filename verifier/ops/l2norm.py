"""l2norm: x[M,N] -> y[M,N] = x / max(||x||_2, eps), torch.nn.functional.normalize(x, p=2, dim=-1, eps=eps);
param ``eps`` 1e-12 (torch's default).

Budget: derived from the reference (verifier.ops.derived: the sum of squares, sqrt, the clamp at eps and the
division). eps is compared with the norm, not added to the sum of squares: the two differ only on rows whose norm
is near or below sqrt(eps)·... (the case l2_tiny_rows); a zero row gives 0 (0 / eps), never NaN.
"""
from __future__ import annotations

import numpy as np

from verifier.numerics.errmodel import gamma
from verifier.numerics.ulp import round_to
from verifier.ops.model import Invariant, Op, OpCase


def reference(inputs, params):
    import torch  # here, not at import: a CUDA check child never loads torch
    return {"y": torch.nn.functional.normalize(inputs["x"], p=2.0, dim=-1, eps=params["eps"])}


def _unit_gap(i, o, p):
    return np.abs(np.sqrt((o["y"] ** 2).sum(axis=1)) - 1.0)


def _unit_bound(i, o, p, c):
    """||y|| = 1 on rows whose norm is past eps: the sum of squares gamma(N + 1), sqrt and the division (the math
    mode's constants), each y_j rounded to the output once (2·u_out·||y||, squared terms)."""
    x = i["x"]
    norm = np.sqrt((x * x).sum(axis=1))
    from verifier import dtypes as _dt
    u_out = _dt.unit_roundoff(c.out) if _dt.is_float(c.out) else 0.0
    g = gamma(x.shape[1] + 3 + c.intr.rsqrt + c.intr.div, c.u) + 2 * u_out * c.out_ulps + 2.0 ** -40
    return np.where(np.isfinite(norm) & (norm > 2 * p["eps"]), g, np.inf)


def _tiny(rng):
    """Rows of norm 1e-6 (even rows: N(0,1)·1e-7 over 64 columns... any N) and 1e-13 (odd rows, below eps = 1e-12):
    y = x/||x|| on the first, x/eps on the second. A kernel adding eps inside the sqrt (x / sqrt(Σx² + eps)) is off
    by ~40% on the first and by 1e6 on the second; on randn rows the two agree to 1e-13. In float16 the first rows
    are subnormals (multiples of 2^-24) and the second all zeros."""
    def fn(shape, dtype):
        M, N = shape
        v = rng.standard_normal(shape)
        v /= np.sqrt((v * v).sum(axis=1, keepdims=True))
        v *= np.where(np.arange(M) % 2 == 0, 1e-6, 1e-13)[:, None]
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            return round_to(v, dtype).astype(np.float64)
    return fn


CASES = (
    OpCase("l2_tiny_rows", "rows of norm 1e-6 and 1e-13 (below eps = 1e-12): max(||x||, eps), not sqrt(Σx² + eps)",
           4, 256, _tiny, quick=True),
)

OPDEF = Op(
    "l2norm", inputs={"x": "MxN"}, outputs={"y": "MxN"}, params={"eps": 1e-12}, reference=reference,
    invariants=[Invariant("unit_norm", measure=_unit_gap, bound=_unit_bound,
                          what="||y|| == 1 where ||x|| > eps (value = | ||y|| - 1 |)")],
    cases=CASES, description="torch.nn.functional.normalize(x, p=2, dim=-1, eps)",
)
