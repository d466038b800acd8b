"""The logits the softmax family normalizes, with its extra inputs and params (docs/specs.md, "softmax with extra
inputs"), in the order FlashAttention and PyTorch's attention apply them:

    z = x·scale;  z = softcap·tanh(z / softcap) (softcap > 0);  z += -slope_i·|i + causal_offset - j| (alibi_slopes);
    z += mask (mask[N] for every row, mask[M,N] per row);  z = -inf where causal and j > i + causal_offset.

Row r's query index i is r mod q_len (q_len > 0: rows are (batch·head, query) flattened) or r (q_len = 0).
causal_offset = 0 is PyTorch's ``is_causal`` (top-left); FlashAttention's bottom-right alignment of a q_len x N
block is causal_offset = N - q_len. ``sinks[M]``: one more logit per row, in the max and the denominator only.
The masks' index rules are verifier.ops.softmax_inputs's (one home for the op's semantics).
With every params default the logits are x itself (the float64 arithmetic below is then exact).

float64 error (u = 2**-53): every step rounds once (u|result|), tanh is numpy's (C_TANH u) and has slope <= 1, so
|z - z_true| <= u·(C_TANH + 4)·(|x·scale| + |bias| + |mask|) + TINY: ``bound``.
"""
from __future__ import annotations

import mpmath
import numpy as np

from references._common import TINY, U, as_f64
from verifier.ops.softmax_inputs import alibi_bias, apply_mask, causal_masked, fill_dead, mask_mode, query_index

C_TANH = 8.0  # numpy float64 tanh: a few ulps


def logits(inputs: dict, params: dict):
    """(z, bound, sink): the float64 logits, an absolute bound on their error, the sink logit per row (or None)."""
    x = as_f64(inputs["x"])
    M, N = x.shape
    scale, cap = float(params.get("scale", 1.0) or 1.0), float(params.get("softcap") or 0.0)
    with np.errstate(all="ignore"):
        z = x * scale if scale != 1.0 else x.copy()
        mag = np.abs(z)
        if cap > 0:
            z = cap * np.tanh(z / cap)
        if inputs.get("alibi_slopes") is not None:
            b = alibi_bias(as_f64(inputs["alibi_slopes"]), M, N, params)
            z = z + b
            mag = mag + np.abs(b)
        if inputs.get("mask") is not None:
            mk = np.broadcast_to(as_f64(inputs["mask"]), (M, N))
            z = apply_mask(z, mk, params)
            mag = np.where(mk != 0, 0.0, mag) if mask_mode(params) == "fill" else (
                mag + np.where(np.isfinite(mk), np.abs(mk), 0.0))
        z = np.where(causal_masked(M, N, params), -np.inf, z)
        exact = scale == 1.0 and cap == 0 and inputs.get("alibi_slopes") is None and inputs.get("mask") is None
        bound = np.zeros_like(z) if exact else np.where(np.isfinite(mag), U * (C_TANH + 4) * mag + TINY, np.inf)
    sink = as_f64(inputs["sinks"]) if inputs.get("sinks") is not None else None
    mk = np.broadcast_to(as_f64(inputs["mask"]), (M, N)) if inputs.get("mask") is not None else None
    filled = fill_dead(z, sink, params, mk)  # masked_rows='uniform': a dead row's masked logits, one equal value
    return filled, (bound if filled is z else np.where(np.isneginf(z), 0.0, bound)), sink


def fully_masked(z: np.ndarray, sink) -> np.ndarray:
    """[M] rows with no live logit: every z is -inf and no sink (a sink keeps a row's mass: its outputs are 0)."""
    dead = np.all(np.isneginf(z), axis=1)
    return dead & ~np.isfinite(sink) if sink is not None else dead


def mp_logits(inputs: dict, params: dict, rows) -> tuple:
    """([row of mpf logits], [mpf sink or None]) of ``rows``, at the caller's working precision."""
    x = as_f64(inputs["x"])
    M, N = x.shape
    scale, cap = mpmath.mpf(float(params.get("scale", 1.0) or 1.0)), float(params.get("softcap") or 0.0)
    causal = causal_masked(M, N, params)
    mask = np.broadcast_to(as_f64(inputs["mask"]), (M, N)) if inputs.get("mask") is not None else None
    slopes = as_f64(inputs["alibi_slopes"]) if inputs.get("alibi_slopes") is not None else None
    qi = query_index(M, params, N)  # causal_offset included
    sinks = as_f64(inputs["sinks"]) if inputs.get("sinks") is not None else None
    fill = mask_mode(params) == "fill"
    out, sk = [], []
    for r in rows:
        row = []
        for j in range(N):
            v = mpmath.mpf(float(x[r, j])) * scale
            if cap > 0 and mpmath.isfinite(v):
                v = cap * mpmath.tanh(v / cap)
            elif cap > 0 and not mpmath.isnan(v):
                v = mpmath.mpf(cap) * (1 if v > 0 else -1)
            if slopes is not None:
                v = v - mpmath.mpf(float(slopes[r])) * abs(int(qi[r]) - j)
            if mask is not None and fill and mask[r, j] != 0:
                v = mpmath.mpf(float(mask[r, j]))  # mask_mode='fill': the mask's value replaces the logit
            elif mask is not None:
                v = v + mpmath.mpf(float(mask[r, j]))
            row.append(mpmath.mpf("-inf") if causal[r, j] else v)
        if params.get("masked_rows") == "uniform" and mask is not None and all(v == -mpmath.inf for v in row) and (
                sinks is None or not np.isfinite(sinks[r])):
            row = [mpmath.mpf(0) if mask[r, j] != 0 else v for j, v in enumerate(row)]  # fill_dead's rule
        out.append(row)
        sk.append(None if sinks is None else mpmath.mpf(float(sinks[r])))
    return out, sk
