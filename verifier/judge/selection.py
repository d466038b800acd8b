"""Tie-aware comparison of an op that picks the top k of a score row (``Op(selection=Selection(...))``: MoE
routing's ``topk_softmax``). An index output cannot be compared element by element with the reference's picks:
where gates tie, or differ by less than a kernel's rounding error, either pick is right, and the reference's
tie-break (torch.topk's) is no contract.

Per row, with s the exact scores (verifier.ops.derived: the float64 value of ``scores`` and e, the bound on the error
a kernel computing them in its accumulation dtype may make) and t the exact k-th largest score:

* the picks are integers in [0, E), distinct;
* each pick j is in the top k up to the kernel's error: s_j + e_j >= t - e_t, e_t the largest bound among the
  experts whose score is t (a kernel's gates may order j and the k-th either way there; outside, j is wrong);
* they come largest first within the same band: s_a + e_a >= s_b - e_b for each pick a before b (unless the
  selection declares its picks unordered, ``Selection(ordered=False)`` or a param naming it);
* the other outputs (the values) are compared with ``at`` evaluated at the kernel's own picks, within the derived
  budget of that evaluation (base 1 ULP + E / ulp, as every derived budget; verifier.judge.tolerance).

An expert whose score is NaN is free: picked or not, at any position (torch.topk ranks NaN largest, other kernels
drop it; ``Selection(nan='largest')`` ranks it as +inf instead, torch.topk's order, for a torch.topk replacement); the other picks are judged as above among the non-NaN scores, with t their (k - q)-th largest, q the NaN
experts picked, and in order among themselves. A row of NaN scores (the softmax gate) takes any distinct picks; a
grouped row holding a NaN is not judged (range and distinctness still hold). A wrong pick is a ``value``
finding naming the row, the position, the expert picked, its exact score and the exact k-th largest.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.judge import group_choice as _groups
from verifier.judge import tolerance as _tol
from verifier.judge.compare import Comparison, TensorComparison, compare_tensor
from verifier.results.findings import Finding

__all__ = ["Pick", "PickComparison", "compare_selection", "judge_picks"]

PICKS_LISTED = 5


@dataclass(frozen=True)
class Pick:
    """One wrong pick: row, position among the k, the expert picked (as written), its exact score (NaN when the
    index is out of range), the exact k-th largest score, the band allowed below it, and what is wrong."""

    index: tuple  # (row, position)
    expert: int
    score: float
    kth: float
    band: float
    why: str
    group: int = -1  # the expert's group (why 'group': a grouped selection's pick outside the kept groups)

    def describe(self) -> str:
        row, pos = self.index
        if self.why == "below":
            return (f"row {row}, position {pos}: expert {self.expert} with gate {self.score!r} is not in the top k: the "
                    f"exact k-th largest gate is {self.kth!r}, and the kernel's error band is {self.band:.3g}")
        if self.why == "order":
            # score: the gate of the pick before it, kth: this pick's (excess: how far this one is above it)
            return (f"row {row}, position {pos}: expert {self.expert} with gate {self.kth!r} comes after a smaller "
                    f"gate ({self.score!r}): picks must be largest first (band {self.band:.3g})")
        if self.why == "group":
            return (f"row {row}, position {pos}: expert {self.expert} is in group {self.group}, which no right group "
                    f"choice keeps with these picks: its group score is {self.score!r}, the topk_group-th best group's "
                    f"is {self.kth!r} (band {self.band:.3g})")
        if self.why == "extra":  # a dense row (verifier.judge.dense_selection): expert holds the count
            return (f"row {row}: {self.expert} nonzero weights, more than k = {int(self.kth)} (every expert not picked "
                    "must be exactly 0; ties at the k-th largest are broken, not all kept)")
        if self.why == "duplicate":
            return f"row {row}, position {pos}: expert {self.expert} picked twice"
        return f"row {row}, position {pos}: index {self.expert} is outside [0, {int(self.kth)})"

    @property
    def excess(self) -> float:
        if self.why in ("below", "order", "group"):
            gap = self.kth - self.score
            return float(gap / self.band) if self.band > 0 else float("inf")
        return float("inf")


@dataclass(frozen=True)
class PickComparison(TensorComparison):
    """The index output of a selection: ``wrong`` lists the first wrong picks; ``mismatched`` counts them all."""

    wrong: tuple = ()

    def message(self) -> str:
        shape = "x".join(map(str, self.shape))
        head = "right (tie-aware)" if self.values_ok else "NOT a right top-k choice"
        lines = [f"Output {self.name!r} ({self.dtype}, {shape}) is {head}:",
                 f"  Wrong picks: {self.mismatched} / {self.numel} ({self.percent:.1f}%)"]
        lines += [f"    {p.describe()}" for p in self.wrong]
        return "\n".join(lines)

    def findings(self, base: dict) -> list:
        if not self.mismatched:
            return []
        return [Finding(check="value", score=max(p.excess for p in self.wrong), **base,
                        message=(f"{self.name}: {self.mismatched}/{self.numel} picks wrong (tie-aware); first: "
                                 f"{self.wrong[0].describe()}"))]

    def relabeled(self, index) -> "PickComparison":
        return replace(super().relabeled(index), wrong=tuple(replace(p, index=index(p.index)) for p in self.wrong))


def _kth(s: np.ndarray, e: np.ndarray, k: np.ndarray) -> tuple:
    """Per row r: the exact k[r]-th largest of the non-NaN scores t (-inf where k[r] < 1: no slot left to rank) and
    the largest error bound among the scores equal to t."""
    filled = np.where(np.isnan(s), -np.inf, s)
    srt = -np.sort(-filled, axis=1)
    t = np.where(k >= 1, srt[np.arange(s.shape[0]), np.clip(k - 1, 0, s.shape[1] - 1)], -np.inf)
    at_t = (filled == t[:, None]) & ~np.isnan(s)
    return t, np.where(at_t, e, 0.0).max(axis=1)


def judge_picks(name: str, actual, dtype: str, s: np.ndarray, e: np.ndarray, k: int, ordered: bool = True,
           groups=None, nan_largest: bool = False) -> tuple:
    """(PickComparison, safe int64 picks for evaluating the values, rows whose picks cannot be evaluated).
    ``groups``: (n_group, topk_group, group_score, u) of a grouped selection (verifier.judge.group_choice).
    ``nan_largest`` (Selection(nan='largest'), torch.topk's ranking): a NaN score ranks as +inf, not free."""
    if nan_largest:
        e = np.where(np.isnan(s), 0.0, e)
        s = np.where(np.isnan(s), np.inf, s)
    a = _dt.to_numpy(actual)
    got = _dt.canonical(a.dtype)
    if got != dtype:
        raise UsageError(f"output {name!r} is {got} but the op declares {dtype}",
                         fix=f"write the picks as {dtype} (the op's index_dtype param)")
    M, E = s.shape
    if a.shape != (M, k):
        raise UsageError(f"output {name!r} has shape {a.shape}, expected {(M, k)}", fix="pass the [M, k] picks")
    idx = a.astype(np.int64)
    wrong, bad = [], np.zeros((M, k), dtype=bool)
    inrange = (idx >= 0) & (idx < E)
    safe = np.where(inrange, idx, 0)
    for r, p in np.argwhere(~inrange):
        wrong.append(Pick((int(r), int(p)), int(idx[r, p]), float("nan"), float(E), 0.0, "range"))
    bad |= ~inrange
    srt = np.sort(safe, axis=1)
    dup_sorted = np.zeros_like(srt, dtype=bool)
    dup_sorted[:, 1:] = srt[:, 1:] == srt[:, :-1]
    for r in np.flatnonzero(dup_sorted.any(axis=1)):
        seen = set()
        for p in range(k):
            j = int(safe[r, p])
            if inrange[r, p] and j in seen:
                wrong.append(Pick((int(r), p), j, float(s[r, j]), 0.0, 0.0, "duplicate"))
                bad[r, p] = True
            seen.add(j)
    # A NaN score is free: a kernel may pick that expert or not, anywhere (torch.topk ranks NaN largest, others drop
    # it); the other picks are the top of the non-NaN scores. A softmax gate makes every score of the row NaN: any
    # distinct picks. Grouped rows holding a NaN are not judged (their group scores are NaN).
    nan_s = np.isnan(s)
    judged = ~(nan_s.any(axis=1) if groups is not None else nan_s.all(axis=1))
    rows = np.arange(M)[:, None]
    outside = np.zeros((M, k), dtype=bool)
    ranked = s
    ranked_e, sj, ej = e, s[rows, safe], e[rows, safe]
    if groups is not None:  # judged against a right group choice that makes the picks right, if any
        *grouping, u = groups
        n, tg, how = grouping[:3]
        fill = grouping[3] if len(grouping) > 3 else -np.inf  # a Selection's groups() of (n, tg, how): -inf
        allowed, G, eG = _groups.allowed_experts(s, e, safe, judged, n, tg, how, u, k, fill)
        ranked = np.where(allowed, s, fill)
        if fill == -np.inf:
            outside = judged[:, None] & inrange & ~allowed[rows, safe]
        else:  # a dropped group's expert ranks as exactly `fill` (group_fill='zero'): judged as such below
            ranked_e = np.where(allowed, e, 0.0)
            sj, ej = ranked[rows, safe], ranked_e[rows, safe]
        T = -np.sort(-np.where(judged[:, None], G, 0.0), axis=1)[:, tg - 1]
        eT = np.where(G == T[:, None], eG, 0.0).max(axis=1)
        size = E // n
        for r, p in np.argwhere(outside):
            g = int(safe[r, p]) // size
            wrong.append(Pick((int(r), int(p)), int(idx[r, p]), float(G[r, g]), float(T[r]),
                              float(eG[r, g] + eT[r]), "group", g))
    free = inrange & np.isnan(sj)  # picks of NaN-scored experts
    # the slots left to the non-NaN experts: their (k - free picks)-th largest is the boundary
    t, e_t = _kth(np.where(judged[:, None], ranked, 0.0), ranked_e, k - free.sum(axis=1))
    ranked_pick = judged[:, None] & inrange & ~free
    # each ranked pick against the ranked pick before it (free picks in between are skipped)
    last = np.maximum.accumulate(np.where(ranked_pick, np.arange(k), -1), axis=1)
    prev = np.concatenate([np.full((M, 1), -1), last[:, :-1]], axis=1)
    sp, ep = sj[rows, np.maximum(prev, 0)], ej[rows, np.maximum(prev, 0)]
    with np.errstate(invalid="ignore"):
        below = ranked_pick & ~outside & ~(sj + ej >= t[:, None] - e_t[:, None])
        later = ranked_pick & (prev >= 0) & ~(sp + ep >= sj - ej)
        later &= ordered  # picks in any order (Selection.ordered False): only the set is judged
    for r, p in np.argwhere(below):
        wrong.append(Pick((int(r), int(p)), int(idx[r, p]), float(sj[r, p]), float(t[r]),
                          float(ej[r, p] + e_t[r]), "below"))
    for r, p in np.argwhere(later & ~below):
        wrong.append(Pick((int(r), int(p)), int(idx[r, p]), float(sp[r, p]), float(sj[r, p]),
                          float(ep[r, p] + ej[r, p]), "order"))
    bad |= below | outside | later
    wrong.sort(key=lambda p: p.index)
    cmp = PickComparison(name=name, dtype=dtype, shape=(M, k), numel=M * k, mismatched=int(bad.sum()),
                         nonfinite_mismatched=0, max_ulps=0.0, worst=(), nonfinite=(), wrong=tuple(wrong[:PICKS_LISTED]))
    unusable = (~inrange).any(axis=1) | dup_sorted.any(axis=1)
    return cmp, safe, unusable


def compare_selection(op, c, xs: dict, outputs: dict, context=None) -> Comparison:
    """The outputs of selection op ``op`` (verifier.ops.model.Op with ``selection``) under criteria ``c``
    (verifier.judge.Criteria): the picks tie-aware, every other output at the kernel's picks."""
    sel = op.selection
    k = op.shape_of(sel.indices, 1, 1, c.params)[1]
    (scores,) = _tol.derive(c.op, lambda i, p: {"s": sel.scores(i, p)}, c.dtypes, c.math_mode, xs, c.params,
                            c.online).values()
    s, e = (np.asarray(a, dtype=np.float64) for a in scores)
    idx_dtype = op.output_dtype(sel.indices, c.dtypes, c.params)
    groups = sel.groups(c.params) if sel.groups is not None else None
    if groups is not None:  # the group scores' addition rounds in the accumulation dtype
        groups = (*groups, _dt.unit_roundoff(c.dtypes.acc or c.dtypes.input))
    picks, safe, unusable = judge_picks(sel.indices, outputs[sel.indices], idx_dtype, s, e, k, sel.is_ordered(c.params),
                                   groups, nan_largest=sel.nan == "largest")
    at = _tol.derive(c.op, sel.at, c.dtypes, c.math_mode, {**xs, sel.indices: safe}, c.params, c.online)
    missing = [t for t in op.outputs if t != sel.indices and t not in at]
    if missing:
        raise UsageError(f"op {op.name!r}: its selection's at() gave no {missing}",
                         fix="return every output but the indices from at(inputs, params)")
    tensors = []
    for t in op.outputs:
        if t == sel.indices:
            tensors.append(picks)
            continue
        v, E = (np.asarray(a, dtype=np.float64) for a in at[t])
        dtype = op.output_dtype(t, c.dtypes, c.params)
        integer = _dt.numpy_dtype(dtype).kind in "iub"  # an integer output (a slot number) is exact, as elsewhere
        base = 0.0 if integer else _tol.declared_output_ulps(c.op, c.dtypes, c.math_mode, c.overrides)
        errs = _tol.Errors(base={t: base}, E={t: np.where(unusable[:, None], 0.0, E)}, dtypes={t: dtype})
        # a row whose picks are not k distinct experts is the picks' finding, not this output's: NaN on both sides
        # (0 for an integer output, which holds no NaN)
        skip = 0.0 if integer else np.nan
        exact = np.where(unusable[:, None], skip, v)
        budget = errs.budget(_Exact({t: exact}))[t]
        actual = np.where(unusable[:, None], skip, _dt.to_numpy(outputs[t]).astype(np.float64)).astype(
            _dt.numpy_dtype(dtype))
        tensors.append(compare_tensor(t, actual, None, exact, budget, dtype, errs, None))
    return Comparison(tuple(tensors), tuple(sorted((context or {}).items(), key=lambda kv: kv[0])))


@dataclass(frozen=True)
class _Exact:
    exact: dict
