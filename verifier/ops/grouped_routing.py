"""Grouped MoE routing on topk_softmax (DeepSeek-V2 / V3; vLLM's and SGLang's ``grouped_topk`` /
``biased_grouped_topk``): the E experts split into ``n_group`` groups of E / n_group in order; each group is scored
by what the picks rank (gate, or gate + bias), ``group_score="max"`` (V2: its largest) or ``"top2_sum"`` (V3: the
sum of its two largest; ``None``, the default, takes vLLM's rule: top2_sum with a bias, max without); the
``topk_group`` best groups are kept and the k picks are the top k over the experts of the kept groups only.

params: n_group=1 (no grouping: the op as before), topk_group (required once n_group > 1), group_score,
group_fill='-inf' (what the dropped groups' experts rank as: '-inf', vLLM's and SGLang's torch paths; 'zero',
Hugging Face's DeepseekV3 router masked_fill(..., 0.0), which lmdeploy's fused_noaux_tc keeps: where every kept
expert's gate + bias is below 0, dropped experts, all tied at 0, are picked).
The judge's group stage is verifier.judge.group_choice; the params, the reference's group mask and the cases live
here."""
from __future__ import annotations

from typing import Optional

import numpy as np

from verifier.errors import SpecError
from verifier.ops.samplers import fit as _fit, normal as _normal


GROUP_SCORES = ("max", "top2_sum")
GROUP_FILLS = {"-inf": -np.inf, "zero": 0.0}  # group_fill: the score a dropped group's experts rank with


def grouping(p: dict) -> Optional[tuple]:
    """(n_group, topk_group, group_score, fill) of a grouped selection, or None (n_group 1: no grouping); fill is
    the float the dropped groups' experts rank with (GROUP_FILLS)."""
    n = p.get("n_group", 1)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise SpecError(f"topk_softmax: n_group={n!r}", fix="give an int n_group >= 1 (1: no grouping)")
    if n == 1:
        return None
    tg = p.get("topk_group")
    if not isinstance(tg, int) or isinstance(tg, bool) or not 1 <= tg <= n:
        raise SpecError(f"topk_softmax: topk_group={tg!r} with n_group={n}",
                        fix="give an int topk_group with 1 <= topk_group <= n_group (the groups kept)")
    how = p.get("group_score") or ("top2_sum" if p.get("bias") else "max")
    if how not in GROUP_SCORES:
        raise SpecError(f"topk_softmax: group_score={how!r}", fix=f"use one of {', '.join(GROUP_SCORES)}")
    fill = p.get("group_fill") or "-inf"
    if fill not in GROUP_FILLS:
        raise SpecError(f"topk_softmax: group_fill={fill!r}", fix=f"use one of {', '.join(map(repr, GROUP_FILLS))}")
    return n, tg, how, GROUP_FILLS[fill]


def refusal(N: int, p: dict) -> Optional[str]:
    """Why rows of N experts are outside a grouped selection with these params (None: they are not)."""
    g = grouping(p)
    if g is None:
        return None
    n, tg, how, _ = g
    if N % n:
        return f"E={N} experts do not split into n_group={n} groups"
    if how == "top2_sum" and N // n < 2:
        return f"groups of {N // n} expert have no top 2 (group_score='top2_sum')"
    if int(p["k"]) > tg * (N // n):
        return f"k={p['k']} is more than the {tg * (N // n)} experts of topk_group={tg} groups of {N // n}"
    return None


def group_scores(choice, n: int, how: str):
    """[M, n] group scores of the [M, E] ranked scores (torch float64, the reference's)."""
    g = choice.reshape(choice.shape[0], n, -1)
    return g.topk(2, dim=-1).values.sum(-1) if how == "top2_sum" else g.amax(-1)


def kept_experts(choice, p: dict):
    """[M, E] bool: the experts of the topk_group best groups (torch.topk's tie-break), or None without groups."""
    import torch

    g = grouping(p)
    if g is None:
        return None
    n, tg, how, _ = g
    gs = group_scores(choice, n, how)
    keep = torch.zeros_like(gs, dtype=torch.bool).scatter(1, torch.topk(gs, tg, dim=-1).indices, True)
    return keep.repeat_interleave(choice.shape[-1] // n, dim=-1)


# --------------------------------------------------------------------------- cases
# Built for DeepSeek-V3's layout, E = 256 in 8 groups of 32 (topk_group 4, k 8); other groupings see them as
# ordinary rows. Their rows' bias (a biased kernel's) is 0, so the built ties and orders hold for gate + bias too.

GROUP = 32


def _rows_of(build):
    def factory(rng):
        def fn(shape, dtype):
            M, E = shape
            return _fit(np.stack([build(rng, E) for _ in range(M)]), dtype)
        return fn
    return factory


def _group_rows(rng, E, tops):
    """A row of E // 32 groups; group i (in random order) holds tops[i] (or nothing) above a floor of -3 - U[0,1)."""
    n = E // GROUP
    row = -3.0 - rng.random(E)
    for slot, top in zip(rng.permutation(n), tops):
        cols = slot * GROUP + rng.permutation(GROUP)[: len(top)]
        row[cols] = top
    return row


def _tied_groups(rng, E):
    """3 groups with the two largest scores (3.0, 2.9), 3 groups tied exactly (2.95, 2.0 and one floor each, the
    same multiset), 2 floor groups: topk_group = 4 keeps the 3 and any one of the tied; the 8 picks are the 3 groups'
    6 and the kept tied group's 2.95 and 2.0."""
    row = _group_rows(rng, E, [(3.0, 2.9)] * 3 + [(2.95, 2.0)] * 3)
    n = E // GROUP
    tied = [g for g in range(n) if np.isclose(row[g * GROUP: (g + 1) * GROUP].max(), 2.95)]
    for g in tied[1:]:  # the same multiset: copy the first tied group's floor, permuted
        row[g * GROUP: (g + 1) * GROUP] = rng.permutation(row[tied[0] * GROUP: (tied[0] + 1) * GROUP])
    return row


def _lone_best(rng, E):
    """One group holds the row's largest logit (4.0) alone above the floor; five hold pairs (3.0 - 0.1i, 2.9 -
    0.1i): by top2_sum of sigmoid gates that group loses (0.98 + 0.05 < 0.94 + 0.93) and its expert, the global
    top, must not be picked; by max it wins."""
    return _group_rows(rng, E, [(4.0,)] + [(3.0 - 0.1 * i, 2.9 - 0.1 * i) for i in range(5)])


def bias_maker(rng, x, p, policy):
    """The correction bias: 0.1·N(0, 1) (the catalogue's draw for a bias), shifted by -2 for the negative-choice
    case (every gate + bias below 0), 0 for the grouped cases built on the gates alone."""
    b = 0.1 * rng.standard_normal(np.asarray(x).shape[-1])
    if policy == "negative_choice":
        return b - 2.0
    return np.zeros_like(b) if policy == "gates_only" else b


def _cases():
    from verifier.ops.model import OpCase

    return (
        OpCase("topk_grouped_tied_groups", "E = 256 in 8 groups: three groups tied exactly at the topk_group "
               "boundary (same multiset): any one may be kept, but the picks must come from one kept group", 4, 256,
               _rows_of(_tied_groups), policy="gates_only"),
        OpCase("topk_grouped_lone_best", "E = 256 in 8 groups: the global top expert sits alone in a group whose "
               "top-2 sum of sigmoid gates loses (DeepSeek-V3 must not pick it; V2's max keeps it)", 4, 256, _rows_of(_lone_best),
               policy="gates_only"),
        OpCase("topk_grouped_negative_choice", "bias near -2: every gate + bias below 0; a kernel masking the "
               "dropped groups with 0 instead of -inf picks them (and one masking with -inf under group_fill='zero' "
               "does not)", 4, 256, _normal, policy="negative_choice",
               needs=("bias",)),
    )


CASES = _cases()
