"""The group stage of a grouped selection (``Selection(groups=...)``: DeepSeek-V2 / V3 routing on topk_softmax,
verifier.ops.grouped_routing), tie-aware as the picks are (verifier.judge.selection).

The E experts split into n groups of E / n in order. With s, e the exact ranked scores and their derived error bounds,
each group's exact score G and bound eG: 'max' G = max s, eG = max e (max is 1-Lipschitz in the max norm);
'top2_sum' G = the sum of the two largest s, eG = the sum of the two largest e of the group (however a kernel's
errors reorder the group, its top-2 sum moves by no more) plus u·|G| (the one addition). A set K of topk_group groups
is a right group choice iff no kept group is below a dropped one beyond the two bounds:
min over K of (G + eG) >= max over the rest of (G - eG) (exact ties and near ties may fall either way).

A row's picks are right iff SOME right K makes them right: every pick in a group of K, and each pick j in the top k
of K's experts up to the band (s_j + e_j >= t_K - e_t, t_K the exact k-th largest score among K's experts). Another
group choice changes which experts are eligible and so t_K: a pick is never judged against the union of every
group choice. ``allowed_experts`` finds such a K per row (the exact best groups first, then the other right ones, the
groups every right K must hold or can never hold fixed first); where none exists the row is judged against the exact
best groups, and a pick outside them is a ``group`` finding.

``fill`` (the op's group_fill): -inf, the dropped groups' experts are never eligible (above); 0.0 (Hugging Face's
masked_fill(..., 0.0)), they rank as exactly 0 (no error), so a pick outside K is right iff 0 reaches t_K's band,
t_K now the k-th largest of K's scores and those zeros.
"""
from __future__ import annotations

import itertools

import numpy as np

COMBOS_MAX = 20000  # group choices tried per row: C(16, 8) = 12870 fits; past it the exact choice only (strict)


def group_bounds(s: np.ndarray, e: np.ndarray, n: int, how: str, u: float) -> tuple:
    """([M, n] exact group scores, [M, n] their error bounds)."""
    M = s.shape[0]
    sg, eg = s.reshape(M, n, -1), e.reshape(M, n, -1)
    if how == "max":
        return sg.max(-1), eg.max(-1)
    with np.errstate(invalid="ignore"):
        G = -np.sort(-sg, axis=-1)[..., :2].sum(-1)
        return G, -np.sort(-eg, axis=-1)[..., :2].sum(-1) + u * np.abs(G)


def _right_choice(keep: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> bool:
    return bool(keep.all()) or bool(hi[keep].min() >= lo[~keep].max())


def _fits(keep: np.ndarray, s: np.ndarray, e: np.ndarray, picks: np.ndarray, k: int, size: int,
          fill: float = -np.inf) -> bool:
    ok = np.repeat(keep, size)
    if fill == -np.inf and not ok[picks].all():
        return False
    sk, ek = np.where(ok, s, fill), np.where(ok, e, 0.0)
    t = np.sort(sk)[-k]
    e_t = ek[sk == t].max()
    return bool((sk[picks] + ek[picks] >= t - e_t).all())


def _row_choice(G, eG, s, e, picks, tg: int, k: int, fill: float = -np.inf):
    """The kept-group mask [n] of a right choice that makes these picks right, or None."""
    n, size = G.shape[0], s.shape[0] // G.shape[0]
    exact = np.zeros(n, dtype=bool)
    exact[np.argsort(-G, kind="stable")[:tg]] = True
    hi, lo = G + eG, G - eG
    if _right_choice(exact, hi, lo) and _fits(exact, s, e, picks, k, size, fill):
        return exact
    others = ~np.eye(n, dtype=bool)
    must = ((hi[None, :] < lo[:, None]) & others).sum(1) >= n - tg  # every right choice keeps it
    never = ((lo[None, :] > hi[:, None]) & others).sum(1) >= tg  # no right choice keeps it
    base = must.copy()
    if fill == -np.inf:  # a pick's group must be kept (under a finite fill a pick may be a dropped group's 0)
        base[np.unique(picks // size)] = True
    need = tg - int(base.sum())
    free = np.flatnonzero(~base & ~never)
    if (base & never).any() or need < 0 or need > free.size:
        return None
    for tried, extra in enumerate(itertools.combinations(free.tolist(), need)):
        if tried >= COMBOS_MAX:
            return None
        keep = base.copy()
        keep[list(extra)] = True
        if _right_choice(keep, hi, lo) and _fits(keep, s, e, picks, k, size, fill):
            return keep
    return None


def allowed_experts(s, e, picks, judged, n: int, tg: int, how: str, u: float, k: int,
                    fill: float = -np.inf) -> tuple:
    """([M, E] bool: the experts of the group choice each row is judged against, (G, eG) for findings).
    ``picks`` are the kernel's in-range picks (int64, [M, k]); rows not ``judged`` (a NaN score) allow every
    expert; ``fill``: what the others rank as (the op's group_fill)."""
    M, E = s.shape
    G, eG = group_bounds(s, e, n, how, u)
    allowed = np.ones((M, E), dtype=bool)
    for r in np.flatnonzero(judged):
        keep = _row_choice(G[r], eG[r], s[r], e[r], picks[r], tg, k, fill)
        if keep is None:
            keep = np.zeros(n, dtype=bool)
            keep[np.argsort(-G[r], kind="stable")[:tg]] = True
        allowed[r] = np.repeat(keep, E // n)
    return allowed, G, eG
