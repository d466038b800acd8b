"""l2norm: x[M,N] -> y[M,N] = x / d(x), d as param ``eps_mode`` says, eps param ``eps`` (1e-12, torch's default):

- ``"clamp"`` (default): d = max(||x||_2, eps), torch.nn.functional.normalize(x, p=2, dim=-1, eps=eps): a zero
  row gives 0 (0 / eps), never NaN;
- ``"sqrt"``: d = sqrt(Σx² + eps), eps inside the root (flash-linear-attention's ``l2norm`` and the copies of it in
  vLLM and SGLang: x · rsqrt(Σx² + eps));
- ``"add"``: d = ||x||_2 + eps.

The three agree to ~eps/||x||² relatively on ordinary rows and differ on rows of norm near or below sqrt(eps) or eps
(the case l2_tiny_rows): which one a kernel computes is its declaration, not a tolerance.

Budget: derived from the reference (verifier.ops.derived: the sum of squares, sqrt, the eps term and the division).
"""
from __future__ import annotations

import numpy as np

from verifier.errors import SpecError
from verifier.numerics.errmodel import gamma
from verifier.numerics.ulp import round_to
from verifier.ops.model import Invariant, Op, OpCase

EPS_MODES = ("clamp", "sqrt", "add")


def _mode(p):
    mode = p.get("eps_mode", "clamp")
    if mode not in EPS_MODES:
        raise SpecError(f"l2norm: eps_mode={mode!r}",
                        fix="use 'clamp' (x / max(||x||, eps), F.normalize), 'sqrt' (x / sqrt(sum x^2 + eps)) or "
                            "'add' (x / (||x|| + eps))")
    return mode


def reference(inputs, params):
    import torch  # here, not at import: a CUDA check child never loads torch
    x, eps, mode = inputs["x"], params["eps"], _mode(params)
    if mode == "clamp":
        return {"y": torch.nn.functional.normalize(x, p=2.0, dim=-1, eps=eps)}
    if mode == "sqrt":
        return {"y": x / torch.sqrt((x * x).sum(dim=-1, keepdim=True) + eps)}
    return {"y": x / (torch.sqrt((x * x).sum(dim=-1, keepdim=True)) + eps)}


def _norm_target(x, p):
    """||y|| exactly: ||x|| / d(x) (1 where the clamp is not reached)."""
    norm = np.sqrt((x * x).sum(axis=1))
    eps, mode = p["eps"], _mode(p)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = {"clamp": np.maximum(norm, eps), "sqrt": np.sqrt(norm * norm + eps), "add": norm + eps}[mode]
        return norm, norm / d


def _unit_gap(i, o, p):
    return np.abs(np.sqrt((o["y"] ** 2).sum(axis=1)) - _norm_target(i["x"], p)[1])


def _unit_bound(i, o, p, c):
    """||y|| = ||x|| / d(x) (1 under the clamp on rows whose norm is past eps): the sum of squares gamma(N + 1),
    sqrt and the division (the math mode's constants), each y_j rounded to the output once (2·u_out·||y||, squared
    terms). The clamp's rows near eps are left out (a kernel's norm on either side of the kink is right)."""
    x = i["x"]
    norm, _ = _norm_target(x, p)
    from verifier import dtypes as _dt
    u_out = _dt.unit_roundoff(c.out) if _dt.is_float(c.out) else 0.0
    g = gamma(x.shape[1] + 3 + c.intr.rsqrt + c.intr.div, c.u) + 2 * u_out * c.out_ulps + 2.0 ** -40
    judged = norm > 2 * p["eps"] if _mode(p) == "clamp" else norm > 0
    return np.where(np.isfinite(norm) & judged, g, np.inf)


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
    OpCase("l2_tiny_rows", "rows of norm 1e-6 and 1e-13 (below eps = 1e-12): where the eps modes differ "
           "(max(||x||, eps), sqrt(Σx² + eps), ||x|| + eps)", 4, 256, _tiny, quick=True),
)

OPDEF = Op(
    "l2norm", inputs={"x": "MxN"}, outputs={"y": "MxN"}, params={"eps": 1e-12, "eps_mode": "clamp"},
    reference=reference,
    invariants=[Invariant("unit_norm", measure=_unit_gap, bound=_unit_bound,
                          what="||y|| == ||x|| / d(x), 1 where ||x|| > eps (value = | ||y|| - that |)")],
    cases=CASES, description="x / max(||x||, eps) (torch.nn.functional.normalize; eps_mode 'sqrt': "
                             "x / sqrt(sum x^2 + eps), 'add': x / (||x|| + eps))",
)
