"""Sampling's top-k filters (FlashInfer's ``top_k_renorm_probs`` / ``top_k_mask_logits``, vLLM's and SGLang's
top-k before sampling): each row of x keeps its k largest entries in place.

- ``top_k_renorm_probs``: probs x[M,N] (other name ``probs``) -> renormed[M,N]: kept / max(sum(kept), sum_floor),
  0 elsewhere (sum_floor = 0: the torch composition ``kept / kept.sum()``, a row whose kept sum is 0 is NaN;
  FlashInfer divides by max(sum, 1e-8): declare ``sum_floor=1e-8``).
- ``top_k_mask_logits``: logits x[M,N] (other name ``logits``) -> masked[M,N]: x where kept, -inf elsewhere.

params: k=8 (an int >= 1; k >= N keeps every element, NaN included: nothing is selected, as FlashInfer copies the
row); ties='keep_all' (every element >= the exact k-th largest kept, as ``x >= torch.topk(x, k).values[:, -1:]``
and FlashInfer's radix pivot do) or 'exactly_k' (exactly k kept: every element above the k-th largest and as many
tied with it as make k, any of them, as a sort-then-cut-at-k kernel does; declared, else a finding).

The k-th largest is torch.topk's (a NaN counts as the largest, as FlashInfer's radix order puts a positive NaN, and
takes one of the k slots: exactly_k keeps one tie fewer per NaN). The reference drops a NaN (``x >= t`` is false for
it: FlashInfer's choice) and a row whose k-th largest is NaN keeps no number; a kernel may keep the NaN instead
(``x.masked_fill(x < t, -inf)``, vLLM's): judged for its own choice (verifier.judge.kept), a renormalized row then NaN.
Kernels compare the input values themselves, so the kept set is exact: no error band (verifier.judge.kept).
"""
from __future__ import annotations

import numpy as np

from verifier.numerics.errmodel import gamma
from verifier.ops.model import Invariant, KeepTopK, Op, OpCase
from verifier.ops.selection import canonical_kept
from verifier.ops.samplers import fit as _fit, holds_inf as _holds_inf, normal as _normal


def _kept_of(inputs, p):
    import torch

    from verifier.ops.bounded import plain  # torch: imported where a reference runs, not with the op

    return torch.as_tensor(canonical_kept(plain(inputs["x"]).numpy(), p).astype(np.int64))


# --------------------------------------------------------------------------- top_k_renorm_probs


def renorm_at(inputs, p):
    """renormed for the kept set inputs['kept']: kept / max(sum(kept), sum_floor), 0 elsewhere."""
    import torch

    x, keep = inputs["x"], inputs["kept"].bool()
    kept = torch.where(keep, x, torch.zeros_like(x))
    s = kept.sum(-1, keepdim=True)
    if p["sum_floor"]:
        s = torch.clamp(s, min=float(p["sum_floor"]))
    return {"renormed": torch.where(keep, kept / s, torch.zeros_like(x))}


def renorm_reference(inputs, p):
    return renorm_at({**inputs, "kept": _kept_of(inputs, p)}, p)


def _unit_sum(inp, ys, p):
    """|sum(renormed) - 1| of a row of nonnegative finite probs whose kept sum is above sum_floor and a normal
    float32 (0 elsewhere: no unit sum is promised)."""
    x, y = inp["x"], ys["renormed"]
    kept = canonical_kept(x, p)
    s = np.where(kept, x, 0.0).sum(axis=1)
    judged = (x >= 0).all(axis=1) & np.isfinite(x).all(axis=1) & (s > max(float(p["sum_floor"]), 2.0 ** -100))
    with np.errstate(invalid="ignore"):
        return np.where(judged, np.abs(np.nan_to_num(y, nan=np.inf).sum(axis=1) - 1.0), 0.0)


def _unit_sum_bound(inp, ys, p, c):
    """Each kept value is p_i / S (or p_i · (1/S), FlashInfer's rcp then multiply) with S the kernel's own sum of
    the kept p_i (gamma(n - 1)), then rounded to the output dtype (out_ulps ULPs: 2·out_ulps·u_out relative, summed
    over values that sum to 1): gamma(n + div + 1) + 2·out_ulps·u_out + n·2^-53 (the float64 check sum), n the
    row's kept count."""
    from verifier import dtypes as _dt

    n = (np.asarray(ys["renormed"]) != 0).sum(axis=1)
    u_out = _dt.unit_roundoff(c.out) if _dt.is_float(c.out) else 0.0
    return np.array([gamma(int(m) + c.intr.div + 1, c.u) for m in n]) + 2 * c.out_ulps * u_out + n * 2.0 ** -53


def _mask_at(inputs, p):
    """masked for the kept set inputs['kept']: x where kept, -inf elsewhere."""
    import torch

    x = inputs["x"]
    return {"masked": torch.where(inputs["kept"].bool(), x, torch.full_like(x, -np.inf))}


def mask_reference(inputs, p):
    return _mask_at({**inputs, "kept": _kept_of(inputs, p)}, p)


# --------------------------------------------------------------------------- cases


def _probs(rng, shape):
    z = rng.standard_normal(shape) * 2.0
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_probs(rng):
    """Rows of probabilities (softmax of 2·randn): what sampling's renorm is given."""
    return lambda shape, dtype: _fit(_probs(rng, shape), dtype)


def _tied_probs(rng):
    """Probabilities drawn from four levels (1, 2, 3, 4 over the row's sum, as dtype values): every row has exact
    ties across the k-th largest (keep_all keeps them all; exactly_k keeps some)."""
    def fn(shape, dtype):
        v = rng.integers(1, 5, size=shape).astype(np.float64)
        return _fit(v / v.sum(axis=1, keepdims=True), dtype)
    return fn


def _tied_logits(rng):
    """Logits from four values (0, 0.5, 1, 1.5): exact ties at the k-th largest in every row."""
    return lambda shape, dtype: _fit(rng.integers(0, 4, size=shape) * 0.5, dtype)


def _sparse_probs(rng):
    """Probability rows with most entries exactly 0 (fewer nonzeros than k in some rows: the k-th largest is 0, every
    zero tied with it) and one all-zero row (keep_all: 0 / 0, NaN, unless a sum_floor is declared)."""
    def fn(shape, dtype):
        M, N = shape
        p = _probs(rng, shape)
        for i in range(M):
            nz = (i * 3) % (N // 2 + 1)
            p[i, rng.permutation(N)[nz:]] = 0.0
        s = p.sum(axis=1, keepdims=True)
        return _fit(np.divide(p, s, out=np.zeros_like(p), where=s > 0), dtype)
    return fn


def _neg_inf_logits(rng):
    """Rows with most logits -inf: some keep fewer finite logits than k (the k-th largest is -inf)."""
    def fn(shape, dtype):
        M, N = shape
        v = rng.standard_normal(shape)
        for i in range(M):
            v[i, rng.permutation(N)[max(1, (i * 3) % (N // 2 + 1)):]] = -np.inf
        return _fit(v, dtype)
    return fn


RENORM_CASES = (
    OpCase("topk_renorm_probs", "softmax rows (probabilities summing to 1), k = 8 of 128", 8, 128, _softmax_probs,
           quick=True),
    OpCase("topk_renorm_tied", "probabilities from four levels: exact ties at the k-th largest in every row", 8, 64,
           _tied_probs, quick=True),
    OpCase("topk_renorm_zeros", "probabilities mostly 0: fewer nonzeros than k, the k-th largest 0; an all-zero row",
           8, 64, _sparse_probs),
    OpCase("topk_renorm_k_ge_n", "N = 6 < k = 8: every element kept, the row renormalized", 8, 6, _softmax_probs),
    OpCase("topk_renorm_n_257", "N = 257 (one past a power of two) probabilities", 4, 257, _softmax_probs),
)


MASK_CASES = (
    OpCase("topk_mask_tied", "logits from four values: exact ties at the k-th largest in every row", 8, 64,
           _tied_logits, quick=True),
    OpCase("topk_mask_neg_inf", "-inf logits: rows with fewer finite logits than k (the k-th largest is -inf)", 8, 64,
           _neg_inf_logits, dtype_ok=_holds_inf),
    OpCase("topk_mask_k_ge_n", "N = 6 < k = 8: the row copied", 8, 6, _normal),
    OpCase("topk_mask_n_257", "N = 257 (one past a power of two)", 4, 257, _normal),
)


_DOC = ("ties: 'keep_all' (every element >= the k-th largest) or 'exactly_k' (declared: exactly k, ties cut anywhere); "
        "k >= N keeps every element")

RENORM = Op(
    "top_k_renorm_probs", inputs={"x": "MxN"}, outputs={"renormed": "MxN"},
    params={"k": 8, "ties": "keep_all", "sum_floor": 0.0}, reference=renorm_reference,
    kept=KeepTopK("renormed", 0.0, renorm_at), other_names={"probs": "x", "renormed_prob": "renormed"},
    invariants=[Invariant("unit_sum", _unit_sum, _unit_sum_bound,
                          "a row of probabilities renormalized over its kept entries sums to 1 up to the sum's, the "
                          "division's and the output's rounding (value = |sum - 1|)")],
    cases=RENORM_CASES,
    description="sampling's top-k renorm: the k largest probabilities of each row kept and divided by their sum "
                "(max(sum, sum_floor)), 0 elsewhere; " + _DOC,
)

MASK = Op(
    "top_k_mask_logits", inputs={"x": "MxN"}, outputs={"masked": "MxN"}, params={"k": 8, "ties": "keep_all"},
    reference=mask_reference, kept=KeepTopK("masked", -np.inf, _mask_at),
    other_names={"logits": "x", "masked_logits": "masked"}, cases=MASK_CASES, exp_family=False,
    description="sampling's top-k mask: the k largest logits of each row kept, -inf elsewhere; " + _DOC,
)
