"""merge_attn_states: two partial attention states of the same rows merged into one (split-KV and cascade
attention; FlashInfer's ``merge_state``, vLLM's ``merge_attn_states``). Inputs: x[M,N] (the first partial output,
v_a: every op's main input is named x), lse_a[M] (its log-sum-exp, float32), v_b[M,N], lse_b[M]; outputs v[M,N] and
lse[M] (float32):

    m = max(lse_a, lse_b),  w_a = B^(lse_a - m),  w_b = B^(lse_b - m)
    v = x · w_a / (w_a + w_b) + v_b · w_b / (w_a + w_b),   lse = m + log_B(w_a + w_b)

B = e or 2: param ``lse_base`` ('e': vLLM, FlashAttention; '2': FlashInfer, whose kernels keep log2-sum-exp2).
An lse of -inf is an empty state: the other side's state passes through (w = 0). Both -inf: param ``empty`` says
what the kernel promises ('nan', the default: the arithmetic above gives NaN, as FlashInfer's and vLLM's kernels do;
'zero': v = 0 and lse = -inf, a guarded kernel). The budget is derived (verifier.ops.derived): the exponentials of
the lse differences carry the error of their argument, so a large difference widens it where it must. A kernel that
writes only v (vLLM's ``output_lse=None``) declares ``params={"lse": False}``: op ``merge_attn_states[-lse]``.
"""
from __future__ import annotations

import math

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import SpecError
from verifier.ops.model import Invariant, Op, OpCase, Tensor
from verifier.ops.samplers import normal as _normal


BASES = ("e", "2")


EMPTY = ("nan", "zero")
LN2 = math.log(2.0)


def _check(p):
    if p["lse_base"] not in BASES:
        raise SpecError(f"merge_attn_states: lse_base={p['lse_base']!r}", fix=f"use one of {', '.join(BASES)}")
    if p["empty"] not in EMPTY:
        raise SpecError(f"merge_attn_states: empty={p['empty']!r}", fix=f"use one of {', '.join(EMPTY)}")


def reference(inputs, p):
    """The merge in float64 (base 2 through e: B^t = exp(t·ln 2), log_B s = log(s) / ln 2)."""
    import torch

    _check(p)
    va, vb, la, lb = inputs["x"], inputs["v_b"], inputs["lse_a"], inputs["lse_b"]
    m = torch.maximum(la, lb)
    da, db = la - m, lb - m
    if p["lse_base"] == "2":
        da, db = da * LN2, db * LN2
    wa, wb = torch.exp(da), torch.exp(db)
    s = wa + wb
    v = va * (wa / s).unsqueeze(-1) + vb * (wb / s).unsqueeze(-1)
    log_s = torch.log(s) if p["lse_base"] == "e" else torch.log(s) / LN2
    lse = m + log_s
    if p["empty"] == "zero":
        empty = m == -math.inf
        v = torch.where(empty.unsqueeze(-1), torch.zeros_like(v), v)
        lse = torch.where(empty, m, lse)
    return {"v": v, "lse": lse}


# --------------------------------------------------------------------------- invariants


def _live(inp):
    return np.isfinite(inp["lse_a"]) & np.isfinite(inp["lse_b"])


def _lse_below(inp, ys, p):
    """How far lse falls below max(lse_a, lse_b) (the merge only adds mass: log_B(w_a + w_b) >= 0)."""
    m = np.maximum(inp["lse_a"], inp["lse_b"])
    return np.where(_live(inp), np.maximum(m - ys["lse"], 0.0), 0.0)


def _lse_above(inp, ys, p):
    """How far lse rises above max + log_B 2 (two states at most double the mass)."""
    m = np.maximum(inp["lse_a"], inp["lse_b"])
    top = m + (LN2 if p["lse_base"] == "e" else 1.0)
    return np.where(_live(inp), np.maximum(ys["lse"] - top, 0.0), 0.0)


def _lse_bound(inp, ys, p, c):
    """m + log_B(s) with s in [1, 2]: the log's absolute error (log_abs + log_rel·log 2)·u (scaled by 1/ln 2 in
    base 2), the rounding of the sum u·(|m| + 1), one float32 output rounding of lse (out_ulps·2^-24·|lse|)."""
    m = np.abs(np.maximum(inp["lse_a"], inp["lse_b"]))
    scale = 1.0 if p["lse_base"] == "e" else 1.0 / LN2
    return np.where(_live(inp), (c.intr.log_abs + c.intr.log_rel + 4) * scale * c.u + 2 * c.u * (m + 2)
                    + c.out_ulps * 2.0 ** -23 * (m + 2), 0.0)


def _outside(inp, ys, p):
    """How far an element of v lies outside [min(x, v_b), max(x, v_b)] (v is a convex combination)."""
    va, vb, v = inp["x"], inp["v_b"], ys["v"]
    out = np.maximum(np.maximum(np.minimum(va, vb) - v, v - np.maximum(va, vb)), 0.0)
    return np.where(_live(inp), np.nan_to_num(out, nan=np.inf).max(axis=1), 0.0)


def _outside_bound(inp, ys, p, c):
    """Weights w / (w_a + w_b) within (exp + 2 + div)·u of exact and summing to 1 within as much; the two products
    and their sum 3u more: (exp + div + 8)·u·max|x, v_b| per row, plus the output rounding (out_ulps·u_out·|v|)."""
    big = np.maximum(np.abs(inp["x"]), np.abs(inp["v_b"])).max(axis=1)
    u_out = _dt.unit_roundoff(c.out) if _dt.is_float(c.out) else 0.0
    return np.where(_live(inp), ((c.intr.exp + c.intr.div + 8) * c.u + 2 * c.out_ulps * u_out) * big, 0.0)


INVARIANTS = [
    Invariant("lse_lower", _lse_below, _lse_bound, "lse >= max(lse_a, lse_b) (value = how far below)"),
    Invariant("lse_upper", _lse_above, _lse_bound, "lse <= max(lse_a, lse_b) + log_B 2 (value = how far above)"),
    Invariant("convex", _outside, _outside_bound,
              "v lies between x and v_b element by element (value = the largest distance outside)"),
]


# --------------------------------------------------------------------------- inputs


def make_lse(side: str):
    """The lse of one side: 5 + 3·N(0, 1) per row (a few units apart), or as the case's policy says:
    'neg_inf_a' / 'neg_inf_b' (that side empty on every other row), 'both_neg_inf' (both empty on every other row),
    'large_diff' (the sides 30, 100 and 1000 apart, either way), 'big' (lse near 200, a few units apart: B^lse
    overflows float32 without the max subtracted), 'equal' (the same lse: weights 1/2)."""
    def make(rng, x, params, policy):
        M = x.shape[0]
        other = "b" if side == "a" else "a"
        base = 5.0 + 3.0 * rng.standard_normal(M)
        rows = np.arange(M)
        if policy == "big":
            base = 200.0 + 3.0 * rng.standard_normal(M)
        elif policy == "equal":
            base = np.full(M, 7.25)
        elif policy == "large_diff":
            gap = np.array([30.0, -30.0, 100.0, -100.0, 1000.0, -1000.0])[rows % 6]
            base = np.full(M, 10.0) + (gap / 2 if side == "a" else -gap / 2)
        elif policy == f"neg_inf_{side}" or policy == "both_neg_inf":
            base = np.where(rows % 2 == 0, -np.inf, base)
        elif policy == f"neg_inf_{other}":
            pass
        return base
    return make


CASES = (
    OpCase("merge_neg_inf_a", "lse_a = -inf on every other row: v_b and lse_b pass through", 8, 128, _normal,
           policy="neg_inf_a", quick=True),
    OpCase("merge_neg_inf_b", "lse_b = -inf on every other row: x and lse_a pass through", 8, 128, _normal,
           policy="neg_inf_b"),
    OpCase("merge_both_neg_inf", "both lse -inf on every other row: the declared empty result (NaN, or v = 0 and "
           "lse = -inf)", 8, 128, _normal, policy="both_neg_inf", quick=True),
    OpCase("merge_large_diff", "lse differences of 30, 100, 1000 either way: one weight underflows to 0", 6, 128,
           _normal, policy="large_diff"),
    OpCase("merge_big_lse", "lse near 200: B^lse overflows float32 unless the max is subtracted first", 4, 128,
           _normal, policy="big"),
    OpCase("merge_equal_lse", "equal lse: weights exactly 1/2", 4, 80, _normal, policy="equal"),
)


OPDEF = Op(
    "merge_attn_states",
    inputs={"x": "MxN", "lse_a": Tensor("M", dtype="float32", make=make_lse("a")), "v_b": "MxN",
            "lse_b": Tensor("M", dtype="float32", make=make_lse("b"))},
    # lse is written unless a kernel says it is not (params {"lse": False}: vLLM's output_lse=None)
    outputs={"v": "MxN", "lse": Tensor("M", dtype="float32", optional=True)},
    params={"lse_base": "e", "empty": "nan", "lse": True}, other_names={"v_a": "x"},
    reference=reference, invariants=INVARIANTS, cases=CASES, float64=False,
    description="two partial attention states (v, lse) merged into one; lse in base e or 2; both empty: NaN or 0",
)
