"""group_norm and group_norm_noaffine: torch.nn.functional.group_norm on rows.

Layout: a row of x[M,N] is one sample of a (batch, C, *spatial) tensor flattened channel-major, as a contiguous
(M, C, H, W) tensor viewed as (M, C·H·W): channel c holds columns [c·N/C, (c+1)·N/C). The G groups of C/G channels
are then G runs of N/G contiguous columns; each is normalized by its own mean and biased variance,
y = (x - mean_g)/sqrt(var_g + eps), then (group_norm) scaled and shifted per channel, ·w[c] + b[c], w and b
broadcast over the channel's N/C spatial columns. Params: ``groups`` G (4), ``channels`` C (8; a multiple of G),
``eps`` (1e-5). Rows whose N is not a multiple of C are outside the op (torch refuses them too).

Budget: the layernorm error model (verifier.ops.layernorm.k_layernorm: two-pass or Welford statistics, condition
aware, ulp(mean)/std on mean >> std groups) applied to each group; invariants: layernorm's mean and std checks per
group.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from verifier.numerics.violations import Violation
from verifier.numerics.ulp import ulp
from verifier.ops.layernorm import check_layernorm, k_layernorm
from verifier.ops.model import Op, OpCase, Tensor
from verifier.ops.samplers import fit as _fit


def shape_reason(N, p):
    C, G = int(p["channels"]), int(p["groups"])
    if C < 1 or G < 1 or C % G:
        return f"channels={C} is not a positive multiple of groups={G}"
    return None if N % C == 0 else f"N={N} is not a multiple of channels={C} (a row is C x spatial values)"


def channel_of_column(N: int, C: int) -> np.ndarray:
    """Column j of a row belongs to channel j // (N/C)."""
    return np.arange(N) // (N // C)


def _affine(x, p, xs):
    """(w, b) per column, (N,): the channel's weight and bias (1 and 0 without affine)."""
    N, C = x.shape[1], int(p["channels"])
    ch = channel_of_column(N, C)
    w = xs["w"][ch] if "w" in xs else np.ones(N)
    b = xs["b"][ch] if "b" in xs else np.zeros(N)
    return w, b


def _groups(a, G):
    """(M, N) -> (M·G, N/G): one row per group."""
    M, N = a.shape
    return a.reshape(M * G, N // G)


def reference(inputs, params):
    import torch  # here, not at import: a CUDA check child never loads torch
    x = inputs["x"]
    M, N = x.shape
    G, C = int(params["groups"]), int(params["channels"])
    y = torch.nn.functional.group_norm(x.reshape(M, C, N // C), G, inputs.get("w"), inputs.get("b"),
                                       eps=params["eps"])
    return {"y": y.reshape(M, N)}


def k_group_norm(x, y, p, c, xs):
    G = int(p["groups"])
    M, N = x.shape
    w, b = _affine(x, p, xs)
    wg, bg = _groups(np.broadcast_to(w, (M, N)), G), _groups(np.broadcast_to(b, (M, N)), G)
    E = k_layernorm(_groups(x, G), _groups(y, G), p, dataclasses.replace(c, N=N // G), {"w": wg, "b": bg})
    return np.asarray(E).reshape(M, N)


def check(x_raw, inp, ys, p, dt, c):
    """layernorm's finite and mean checks per group. Its std check is left out: it assumes x - mean is formed before
    the scaling, while torch's own group_norm (and Liger's) compute y = x·a + c per channel (a = rstd·w, c = b -
    mean·a), whose error is u·|x|·rstd per element, not u·|x - mean|·rstd; the value budget (dmu) covers that."""
    G = int(p["groups"])
    x = inp["x"]
    M, N = x.shape
    w, b = _affine(x, p, inp)
    out = []
    for v in check_layernorm(_groups(x, G), _groups(np.broadcast_to(w, (M, N)), G),
                             _groups(np.broadcast_to(b, (M, N)), G), _groups(ys["y"], G), p["eps"],
                             dataclasses.replace(c, N=N // G)):
        if v.invariant == "layernorm.var":
            continue
        rows = np.unique(v.rows // G)
        out.append(Violation(v.invariant.replace("layernorm", "group_norm"), rows,
                             "per group (group-row r is row r // groups, group r % groups): " + v.message, v.score))
    return out


# --------------------------------------------------------------------------- cases


def group_rows(kind):
    """Rows of 4 groups (the default groups; with more groups the pattern repeats over columns) where group 0 is
    ordinary N(0,1), group 1 is constant (var 0: (x - mean) must be exactly 0), group 2 is mean >> std (1000 + a few
    ULPs, or U[100, 102] where 1000 is not representable finely), group 3 N(0, 1)·100: a kernel mixing groups up
    (a wrong stride, channels-last) or cancelling in E[x²] - E[x]² is off on groups 1 and 2."""
    def factory(rng):
        def fn(shape, dtype):
            M, N = shape
            v = rng.standard_normal(shape)
            q = max(N // 4, 1)
            v[:, q:2 * q] = 3.0
            v[:, 2 * q:3 * q] = 1000.0 + rng.integers(0, 4, (M, q)) * float(ulp(1000.0, dtype))
            v[:, 3 * q:] *= 100.0
            if kind == "shift":
                v += 500.0
            return _fit(v, dtype)
        return fn
    return factory


def ulp_bumps(rng):
    """Issue #36's cancelling rows: 1000 (exact in every float dtype holding it) everywhere, and one (even rows) or
    two (odd rows) elements 1-3 ULPs above in every run of 64 columns; every fourth row negated. The variance is a
    few ULPs², far below what E[x²] - E[x]² keeps of it."""
    def fn(shape, dtype):
        M, N = shape
        step = float(ulp(1000.0, dtype))
        v = np.full(shape, 1000.0)
        for i in range(M):
            for start in range(0, N, 64):
                n = min(64, N - start)
                at = start + rng.choice(n, size=min(1 + i % 2, n), replace=False)
                v[i, at] += step * rng.integers(1, 4, len(at))
            v[i] *= -1.0 if i % 4 == 3 else 1.0
        return _fit(v, dtype)
    return fn


def _holds_1000(dt):
    return dt in ("float32", "float16", "bfloat16", "float64")


CASES = (
    OpCase("gn_group_80_cols", "groups of 80 columns (not a multiple of 32; 8 channels of 10 spatial values per "
           "row): a warp-per-group kernel's tail, channel-to-column mapping", 4, 320, group_rows("plain"),
           dtype_ok=_holds_1000, quick=True),
    OpCase("gn_group_18_cols", "groups of 18 columns, channels of 9: a group narrower than a warp", 4, 72,
           group_rows("plain"), dtype_ok=_holds_1000),
    OpCase("gn_groups_const_and_mean_gg_std", "one constant group (var 0), one of 1000 + a few ULPs (mean >> std: "
           "E[x²] - E[x]² loses the variance), whole rows shifted by 500", 4, 1024, group_rows("shift"),
           dtype_ok=_holds_1000),
    OpCase("gn_cancel_ulp_bumps", "every group 1000 with one or two elements a few ULPs above (issue #36): the "
           "variance is a few ULPs², E[x²] - E[x]² loses it in every dtype", 4, 512, ulp_bumps,
           dtype_ok=_holds_1000),
)

_PARAMS = {"groups": 4, "channels": 8, "eps": 1e-5}
_DOC = "x[M,N] as (M, C, N/C) channel-major; G groups of N/G contiguous columns"

OPDEF = Op(
    "group_norm", inputs={"x": "MxN", "w": Tensor("channels", "weight"), "b": Tensor("channels", "bias")},
    outputs={"y": "MxN"}, params=dict(_PARAMS), reference=reference,
    recipe={"y": (1.0, "group_norm")}, kappas={"group_norm": k_group_norm}, invariants=check, cases=CASES,
    supports=shape_reason, description="torch group_norm with per-channel affine w[C], b[C]; " + _DOC,
)
NOAFFINE = Op(
    "group_norm_noaffine", inputs={"x": "MxN"}, outputs={"y": "MxN"}, params=dict(_PARAMS), reference=reference,
    recipe={"y": (1.0, "group_norm")}, kappas={"group_norm": k_group_norm}, invariants=check, cases=CASES,
    supports=shape_reason, description="torch group_norm without affine (weight None, bias None); " + _DOC,
)
