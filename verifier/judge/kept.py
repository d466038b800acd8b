"""Tie-aware comparison of an op whose output keeps the top k of each row of x in place (``Op(kept=KeepTopK(...))``:
sampling's ``top_k_renorm_probs`` and ``top_k_mask_logits``). Element by element against one reference, a kernel
keeping exactly k of several elements tied at the k-th largest would fail wherever its tie-break differs from the
reference's, and a kernel that drops a tie it must keep would be told only "value mismatch".

Per row, with t the exact k-th largest of x (torch.topk's order; none for k >= N: every element is kept) and the
kernel's kept set read off its output (an element not equal to ``fill``; NaN counts as kept):

* every element above t is kept; no element below t is; a NaN may be kept (written NaN, as
  ``x.masked_fill(x < t, fill)`` does) or dropped (as ``where(x >= t, x, fill)`` does), the values then judged for
  the kernel's choice;
* ties at t: ``ties='keep_all'`` keeps every one; ``ties='exactly_k'`` keeps exactly k - (number above t) - (NaNs:
  each takes one of the k slots, never kept) of them;
* an element whose input equals ``fill`` (a probability 0, a logit -inf) reads the same kept or dropped: it is left
  out of these checks (and a tie count it could be part of is checked as "at most"), and counts as the rule keeps it
  (a row whose kept probabilities are all 0 is 0 / 0 = NaN without a sum_floor, whatever the kernel wrote);
* the values are compared with ``at`` evaluated for the kernel's own kept set, within its derived budget (base 1
  ULP + E / ulp, as every derived budget; verifier.judge.tolerance). A row whose kept set is wrong gets that finding
  alone (its values are not compared).

The kept set is exact: kernels compare the input values themselves, so there is no error band around t.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.judge import tolerance as _tol
from verifier.judge.compare import Comparison, TensorComparison, compare_tensor
from verifier.ops.selection import canonical_kept, check_params, kept_sets, kth_largest, tie_room
from verifier.results.findings import Finding

__all__ = ["KeptComparison", "WrongKept", "compare_kept"]

LISTED = 5


@dataclass(frozen=True)
class WrongKept:
    """One wrong element (or, why 'ties', one row's tie count) of a kept set."""

    index: tuple  # (row, column); (row, -1) for a tie count
    value: float  # x there (the tie value for 'ties')
    kth: float
    why: str  # 'below' (kept, below t), 'above' (dropped, above t), 'tie' (a tie dropped, keep_all), 'ties'
    kept: int = 0  # 'ties': how many ties the kernel kept
    want: int = 0  # 'ties': how many it must keep

    def describe(self) -> str:
        row, col = self.index
        if self.why == "below":
            return f"row {row}, column {col}: {self.value!r} kept, below the k-th largest {self.kth!r}: it must be dropped"
        if self.why == "above":
            return f"row {row}, column {col}: {self.value!r} dropped, above the k-th largest {self.kth!r}"
        if self.why == "tie":
            return (f"row {row}, column {col}: {self.value!r}, tied with the k-th largest, dropped: ties='keep_all' "
                    "keeps every tie (a kernel keeping exactly k declares params={'ties': 'exactly_k'})")
        return (f"row {row}: {self.kept} of the elements tied at the k-th largest {self.kth!r} kept, ties='exactly_k' "
                f"keeps {self.want} (k minus those above it and the NaNs)")


@dataclass(frozen=True)
class KeptComparison(TensorComparison):
    """The kept set of an output (named '<output> kept set'): ``wrong`` lists the first wrong elements;
    ``mismatched`` counts the rows whose kept set is wrong."""

    wrong: tuple = ()

    def message(self) -> str:
        head = "right (tie-aware)" if self.values_ok else "NOT a right top-k kept set"
        lines = [f"{self.name} ({self.shape[0]} rows) is {head}:",
                 f"  Rows with a wrong kept set: {self.mismatched} / {self.numel} ({self.percent:.1f}%)"]
        return "\n".join(lines + [f"    {w.describe()}" for w in self.wrong])

    def findings(self, base: dict) -> list:
        if not self.mismatched:
            return []
        return [Finding(check="value", score=float("inf"), **base,
                        message=f"{self.name}: {self.mismatched}/{self.numel} rows keep a wrong top-k set "
                                f"(tie-aware); first: {self.wrong[0].describe()}")]

    def relabeled(self, index) -> "KeptComparison":
        return replace(super().relabeled(index), wrong=tuple(replace(w, index=index(w.index)) for w in self.wrong))


def _check_rows(x, got_kept, fill, k, ties) -> tuple:
    """(wrong elements listed, bad rows [M], the elements whose output reads the same kept or dropped)."""
    M, N = x.shape
    must, allowed = kept_sets(x, k)
    t = kth_largest(x, k)
    with np.errstate(invalid="ignore"):
        amb = (x == fill) | np.isnan(x)  # reads the same kept or dropped; a NaN is the kernel's to keep or drop
    wrong = []
    below = got_kept & ~allowed & ~amb
    above = ~got_kept & must & ~amb
    tied = allowed & ~must
    bad = below.any(axis=1) | above.any(axis=1)
    for why, where in (("below", below), ("above", above)):
        for r, j in np.argwhere(where)[:LISTED]:
            wrong.append(WrongKept((int(r), int(j)), float(x[r, j]), float(t[r]), why))
    if ties == "keep_all":
        dropped = ~got_kept & tied & ~amb
        bad |= dropped.any(axis=1)
        for r, j in np.argwhere(dropped)[:LISTED]:
            wrong.append(WrongKept((int(r), int(j)), float(x[r, j]), float(t[r]), "tie"))
    else:
        want = tie_room(x, must, k)
        have = (got_kept & tied & ~amb).sum(axis=1)
        open_ = (tied & amb).any(axis=1)  # some ties read the same kept or not: at most
        off = np.where(open_, have > want, have != want) & (k < N)
        bad |= off
        for r in np.flatnonzero(off)[:LISTED]:
            wrong.append(WrongKept((int(r), -1), float(t[r]), float(t[r]), "ties", int(have[r]), int(want[r])))
    wrong.sort(key=lambda w: w.index)
    return tuple(wrong[:LISTED]), bad, amb


def compare_kept(op, c, xs: dict, outputs: dict, context=None) -> Comparison:
    """The kept output of op ``op`` (verifier.ops.model.Op with ``kept``) under criteria ``c``
    (verifier.judge.Criteria): its kept set tie-aware, its values for that set."""
    rule = op.kept
    name = rule.output
    dtype = op.output_dtype(name, c.dtypes, c.params)
    a = _dt.to_numpy(outputs[name])
    if _dt.canonical(a.dtype) != dtype:
        raise UsageError(f"output {name!r} is {_dt.canonical(a.dtype)} but the kernel's output dtype is {dtype}",
                         fix=f"pass the kernel's output as written, in {dtype}")
    x = np.asarray(xs["x"], dtype=np.float64)
    if a.shape != x.shape:
        raise UsageError(f"output {name!r} has shape {a.shape}, expected {x.shape}", fix="pass the [M, N] output")
    k = check_params(c.params, f"op {op.name!r}")
    a64 = a.astype(np.float64)
    got_kept = ~(a64 == rule.fill)  # NaN: kept
    wrong, bad, amb = _check_rows(x, got_kept, rule.fill, k, c.params["ties"])
    M = x.shape[0]
    kept_cmp = KeptComparison(name=f"{name} kept set", dtype=dtype, shape=(M,), numel=M, mismatched=int(bad.sum()),
                              nonfinite_mismatched=0, max_ulps=0.0, worst=(), nonfinite=(), wrong=wrong)
    # the kernel's kept set; an element equal to fill in x as the rule keeps it (its output reads the same either
    # way, but its being kept still counts: an all-zero kept row renormalizes to 0 / 0)
    canon = canonical_kept(x, c.params)
    eff = np.where(bad[:, None] | (amb & ~np.isnan(x)), canon, got_kept)
    at = _tol.derive(c.op, rule.at, c.dtypes, c.math_mode, {**xs, "kept": eff}, c.params, c.online)
    v, E = (np.asarray(arr, dtype=np.float64) for arr in at[name])
    base = _tol.declared_output_ulps(c.op, c.dtypes, c.math_mode, c.overrides)
    errs = _tol.Errors(base={name: base}, E={name: np.where(bad[:, None], 0.0, E)}, dtypes={name: dtype})
    exact = np.where(bad[:, None], np.nan, v)  # a row whose kept set is wrong: the kept-set finding alone
    budget = errs.budget(_Exact({name: exact}))[name]
    actual = np.where(bad[:, None], np.nan, a64).astype(_dt.numpy_dtype(dtype))
    values = compare_tensor(name, actual, None, exact, budget, dtype, errs, None)
    return Comparison((kept_cmp, values), tuple(sorted((context or {}).items(), key=lambda kv: kv[0])))


@dataclass(frozen=True)
class _Exact:
    exact: dict
