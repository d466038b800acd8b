"""topk_softmax_dense: MoE routing's dense combine weights, as GShard / Switch-style routers and DeepSpeed's
``topkgating`` (deepspeed/moe/sharded_moe.py, its ``gates_masked`` before the capacity dimension) return them instead
of (values, indices): gating logits x[M,E] (E is the op's N) -> weights[M,E] float32, the gate at the k chosen
experts (optionally renormalized over the k, times ``scaling``) and exactly 0 at every other expert. The picks and
gates are topk_softmax's (verifier/ops/topk_softmax.py): params k, renormalize, gate, scaling, values_dtype, the
contract zero_sum, the optional input bias[E] and grouped selection (n_group, topk_group, group_score); a dense row has
no order, so there is no index_dtype nor sorted.

Judged tie-aware (verifier.judge.dense_selection): the nonzero set of a row, completed with the best remaining
experts where a picked gate is exactly 0, must be a right top-k set within the kernel's error band (exact ties and
near ties either way), its weights the reference's at those picks within their derived budget, zeros exactly
elsewhere. A router keeping every expert tied with the k-th largest (``gates >= kth``) writes more than k nonzeros on
a tied row: a finding. Capacity-based token dropping (DeepSpeed's drop_tokens) depends on the other rows and is no
per-row op: declare such a router with its capacity large enough, or drop_tokens=False.
"""
from __future__ import annotations

import numpy as np

from verifier.ops import grouped_routing as _grouped
from verifier.ops import topk_softmax as _topk
from verifier.ops.model import Invariant, Op, Selection, Tensor


def _picks_values(inputs, p, indices):
    import torch

    g = _topk.gates(inputs["x"], p)
    return _topk.scaled(_topk.renormalized(torch.gather(g, -1, indices), p), p)


def reference(inputs, p):
    """The torch composition in float64: topk_softmax's reference values scattered into zeros at its picks."""
    import torch

    ref = _topk.reference(inputs, p)
    return {"weights": torch.zeros_like(inputs["x"]).scatter(-1, ref["indices"], ref["values"])}


def at_picks(inputs, p):
    """The [M, k] weights at the kernel's picks (inputs['weights'], int64, read off its dense output)."""
    return {"weights": _picks_values(inputs, p, inputs["weights"])}


def _unit_sum(inp, ys, p):
    """|sum(weights) - scaling| of a renormalized row (0 when not renormalized)."""
    w = ys["weights"]
    return np.abs(w.sum(axis=1) - _topk.scaling_of(p)) if p["renormalize"] else np.zeros(w.shape[0])


def unit_sum_bound(inp, ys, p, c):
    """topk_softmax's bound for its k values (the zeros add nothing), plus the float64 sum of E terms here."""
    k = int(p["k"])
    return _topk.unit_sum_bound(inp, {"values": np.zeros((1, k))}, p, c) + ys["weights"].shape[1] * 2.0 ** -53


INVARIANTS = [
    Invariant("unit_sum", _unit_sum, unit_sum_bound,
              "renormalized weights sum to 1 (times scaling) up to the sum's and the division's rounding (value = "
              "|sum - scaling|)"),
]


def _bytes(M, N, dt, p):
    from verifier import dtypes as _dt

    vsz = _dt.numpy_dtype(p.get("values_dtype") or "float32").itemsize
    return M * N * (_dt.numpy_dtype(dt.input).itemsize + vsz) + (4 * N if p.get("bias") else 0)


def _supports(N, p):
    if N < int(p["k"]):
        return f"E={N} experts, fewer than k={p['k']}"
    return _grouped.refusal(N, p)


PARAMS = {k: v for k, v in _topk.OPDEF.params.items() if k not in ("index_dtype", "sorted")}

OPDEF = Op(
    "topk_softmax_dense", inputs={"x": "MxN", "bias": Tensor("N", "bias", dtype="float32", optional=True,
                                                                make=_grouped.bias_maker)},
    outputs={"weights": Tensor("MxN", dtype="values_dtype")}, params=PARAMS,
    contract_params={"zero_sum": _topk.ZERO_SUM}, reference=reference,
    selection=Selection("weights", scores=_topk.scores, at=at_picks, ordered=False, groups=_grouped.grouping,
                        dense=True),
    supports=_supports, out_dtypes=("float32",), float64=False,
    extra_tolerances=(("float32", "bfloat16", None), ("float32", "float16", None)),
    exp_family=True, invariants=INVARIANTS, cases=_topk.CASES + _grouped.CASES, bytes_moved=_bytes,
    description="MoE routing's dense combine weights: the top-k gates (optionally renormalized) in place, 0 elsewhere",
)
