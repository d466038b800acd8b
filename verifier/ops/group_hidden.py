"""Norms over groups of the hidden dim with a weight per column: ``group_rmsnorm`` and ``group_layernorm``.

A row x[M,N] is cut into ``groups`` G runs of N/G contiguous columns (attention heads, Mamba-2's ``group_size``);
each run is normalized on its own, then every column is scaled by its own weight w[N] (and, for group_layernorm,
shifted by its own bias b[N] when the kernel declares ``b=True``):

- ``group_rmsnorm``: y = x_g / sqrt(mean(x_g²) + eps) · w; eps=1e-6. flash-linear-attention's
  ``GroupNorm(is_rms_norm=True)`` / ``layer_norm_fwd(..., is_rms_norm=True, num_groups=G)``, Mamba-2's
  ``RMSNormGated(group_size=N/G)`` without a gate;
- ``group_layernorm``: y = (x_g - mean_g) / sqrt(var_g + eps) · w (+ b); eps=1e-5. flash-linear-attention's
  ``GroupNorm`` (weight, no bias by default), Mamba's ``layernorm_fn(..., group_size=N/G)``.

Not torch's group_norm (verifier.ops.group_norm): there the weight is per channel of a (C, H·W) sample; here every
column is a channel (C = N, spatial size 1), so w and b have N entries. Rows whose N is not a multiple of groups
are outside the op. Budgets and invariants: the rmsnorm / layernorm models applied group by group (N/G columns).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from verifier.numerics.violations import Violation
from verifier.ops.group_norm import group_rows  # the same four kinds of group, over the hidden dim here
from verifier.ops.layernorm import check_layernorm, k_layernorm
from verifier.ops.model import Op, OpCase, Tensor
from verifier.ops.rmsnorm import check_rms, k_rmsnorm


def shape_reason(N, p):
    G = p["groups"]
    if isinstance(G, bool) or not isinstance(G, (int, np.integer)) or G < 1:
        return f"groups={G!r} is not a positive int"  # as per_token_group_quant's group_size
    return None if N % G == 0 else f"N={N} is not a multiple of groups={G}"


def _groups(a, G):
    """(M, N) -> (M·G, N/G): one row per group."""
    M, N = a.shape
    return np.ascontiguousarray(a).reshape(M * G, N // G)


def _wb(x, xs):
    """(w, b) broadcast to x's (M, N): the per-column weight and bias (0 without one)."""
    M, N = x.shape
    return np.broadcast_to(xs["w"], (M, N)), np.broadcast_to(xs["b"] if "b" in xs else np.zeros(N), (M, N))


def _per_group(c, N, G):
    return dataclasses.replace(c, N=N // G)


def _ref_rms(inputs, params):
    import torch.nn.functional as F  # here, not at import: a CUDA check child never loads torch
    x, G = inputs["x"], int(params["groups"])
    M, N = x.shape
    return {"y": F.rms_norm(x.reshape(M, G, N // G), (N // G,), None, eps=params["eps"]).reshape(M, N)
            * inputs["w"]}


def _ref_ln(inputs, params):
    import torch.nn.functional as F  # here, not at import: a CUDA check child never loads torch
    x, G = inputs["x"], int(params["groups"])
    M, N = x.shape
    y = F.layer_norm(x.reshape(M, G, N // G), (N // G,), None, None, eps=params["eps"]).reshape(M, N) * inputs["w"]
    return {"y": y + inputs["b"] if "b" in inputs else y}


def k_group_rmsnorm(x, y, p, c, xs):
    G = int(p["groups"])
    M, N = x.shape
    return np.asarray(k_rmsnorm(_groups(x, G), _groups(y, G), p, _per_group(c, N, G), {})).reshape(M, N)


def k_group_layernorm(x, y, p, c, xs):
    G = int(p["groups"])
    M, N = x.shape
    w, b = _wb(x, xs)
    E = k_layernorm(_groups(x, G), _groups(y, G), p, _per_group(c, N, G), {"w": _groups(w, G), "b": _groups(b, G)})
    return np.asarray(E).reshape(M, N)


def _per_row(violations, name, G, drop=()):
    """Group-row violations as violations of the op's rows (group-row r is row r // G)."""
    out = []
    for v in violations:
        if v.invariant in drop:
            continue
        out.append(Violation(name + "." + v.invariant.split(".", 1)[1], np.unique(v.rows // G),
                             "per group (group-row r is row r // groups, group r % groups): " + v.message, v.score))
    return out


def check_group_rms(x_raw, inp, ys, p, dt, c):
    G, x = int(p["groups"]), inp["x"]
    M, N = x.shape
    w, _ = _wb(x, inp)
    return _per_row(check_rms("group_rmsnorm", _groups(x, G), _groups(w, G), _groups(ys["y"], G), p["eps"],
                              _per_group(c, N, G)), "group_rmsnorm", G)


def check_group_ln(x_raw, inp, ys, p, dt, c):
    """layernorm's finite and mean checks per group; its std check is left out as for group_norm (a kernel may
    form y = x·a + c per column, a = rstd·w, c = b - mean·a: inside the value budget, outside that check's)."""
    G, x = int(p["groups"]), inp["x"]
    M, N = x.shape
    w, b = _wb(x, inp)
    return _per_row(check_layernorm(_groups(x, G), _groups(w, G), _groups(b, G), _groups(ys["y"], G), p["eps"],
                                    _per_group(c, N, G)), "group_layernorm", G, drop=("layernorm.var",))


def _holds_1000(dt):
    return dt in ("float32", "float16", "bfloat16", "float64")


CASES = (
    OpCase("ghn_groups_of_80", "4 groups of 80 columns: N(0,1), constant (var 0), 1000 + a few ULPs (mean >> std) and "
           "N(0,1)·100: a kernel normalizing the whole row, or mixing up a group's columns or weights, is off on "
           "every group", 4, 320, group_rows("plain"), dtype_ok=_holds_1000, quick=True),
    OpCase("ghn_groups_of_18", "4 groups of 18 columns (not a power of two: a kernel padding each group to a block "
           "and masking by the row's end reads the next group)", 4, 72, group_rows("shift"), dtype_ok=_holds_1000),
)

GROUP_RMSNORM = Op(
    "group_rmsnorm", inputs={"x": "MxN", "w": Tensor("N", "weight")}, outputs={"y": "MxN"},
    params={"groups": 4, "eps": 1e-6}, reference=_ref_rms, recipe={"y": (1.0, "group_rmsnorm")},
    kappas={"group_rmsnorm": k_group_rmsnorm}, invariants=check_group_rms, cases=CASES, supports=shape_reason,
    description="rmsnorm of each of G runs of N/G columns, weight per column (FLA GroupNorm(is_rms_norm=True), "
                "Mamba-2 RMSNormGated(group_size) without z)",
)
GROUP_LAYERNORM = Op(
    "group_layernorm", inputs={"x": "MxN", "w": Tensor("N", "weight"), "b": Tensor("N", "bias", optional=True)},
    outputs={"y": "MxN"}, params={"groups": 4, "eps": 1e-5, "b": None}, reference=_ref_ln,
    recipe={"y": (1.0, "group_layernorm")}, kappas={"group_layernorm": k_group_layernorm},
    invariants=check_group_ln, cases=CASES, supports=shape_reason,
    description="layernorm of each of G runs of N/G columns, weight (and bias, b=True) per column (FLA GroupNorm)",
)
