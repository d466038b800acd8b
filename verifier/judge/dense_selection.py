"""Tie-aware comparison of dense combine weights (``Op(selection=Selection(name, ..., dense=True))``:
``topk_softmax_dense``, the [M, E] routing weights of GShard / Switch / DeepSpeed routers: the gate at the k chosen
experts, optionally renormalized over them, 0 elsewhere). The picks are read off the output, then judged as
verifier.judge.selection judges an index output, as a set:

* the kernel's picks are its nonzero weights (NaN counts as nonzero); more than k of them is a wrong row ('extra'),
  except NaN written at an expert whose exact score is NaN (a NaN gate times a 0/1 mask is NaN: such an expert is free,
  picked or not, as the index form has it);
* fewer than k nonzeros: a pick whose weight is exactly 0 reads the same as an expert not picked, so the row is
  completed with the best remaining experts by exact score (the completion most favourable to the set); their
  reference weight must then be 0 within budget (gates of -inf logits, underflowed gates) — a kernel that dropped a
  pick with a real gate gets a value finding there;
* the nonzero set, completed, must be a right top-k set within the kernel's error band (exact ties and near ties may
  fall either way), and every weight is compared with ``at`` at those picks (renormalized over them), zeros exactly
  everywhere else (an expert not picked has weight 0, budget 1 ULP of 0).
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.judge import tolerance as _tol
from verifier.judge.compare import Comparison, compare_tensor
from verifier.judge.selection import PICKS_LISTED, Pick, judge_picks

__all__ = ["compare_dense"]


def _read_picks(a: np.ndarray, s: np.ndarray, k: int) -> tuple:
    """(idx [M, k] int64, rows with more than k nonzero weights, free NaN entries [M, E]): the nonzero entries first
    (those not free), then the free NaN ones, then the zero entries by exact score, largest first (NaN last)."""
    M, E = a.shape
    with np.errstate(invalid="ignore"):
        nonzero = a != 0
    free = np.isnan(a) & np.isnan(s)
    fixed = nonzero & ~free
    extra = fixed.sum(axis=1) > k
    tier = np.where(fixed, 0, np.where(free, 1, 2))
    by_score = np.where(np.isnan(s), np.inf, -s)
    order = np.lexsort((np.broadcast_to(np.arange(E), (M, E)), by_score, tier), axis=1) if M else np.zeros((0, E), int)
    return order[:, :k].astype(np.int64), extra, free


def compare_dense(op, c, xs: dict, outputs: dict, context=None) -> Comparison:
    """The dense weights of op ``op`` under criteria ``c`` (verifier.judge.Criteria): their nonzero set tie-aware, their
    values at the picks within the derived budget, zeros elsewhere."""
    sel = op.selection
    name = sel.indices
    dtype = op.output_dtype(name, c.dtypes, c.params)
    a = _dt.to_numpy(outputs[name])
    if _dt.canonical(a.dtype) != dtype:
        raise UsageError(f"output {name!r} is {_dt.canonical(a.dtype)} but the op declares {dtype}",
                         fix=f"pass the kernel's weights as written, in {dtype}")
    M, E = np.asarray(xs["x"]).shape
    if a.shape != (M, E):
        raise UsageError(f"output {name!r} has shape {a.shape}, expected {(M, E)}", fix="pass the [M, E] weights")
    k = int(c.params["k"])
    (scores,) = _tol.derive(c.op, lambda i, p: {"s": sel.scores(i, p)}, c.dtypes, c.math_mode, xs, c.params,
                            c.online).values()
    s, e = (np.asarray(v, dtype=np.float64) for v in scores)
    groups = sel.groups(c.params) if sel.groups is not None else None
    if groups is not None:
        groups = (*groups, _dt.unit_roundoff(c.dtypes.acc or c.dtypes.input))
    a64 = a.astype(np.float64)
    idx, extra, free = _read_picks(a64, s, k)
    picks, safe, unusable = judge_picks(f"{name} (nonzero set)", idx, "int64", s, e, k, False, groups)
    picks = replace(picks, dtype=dtype)
    wrong = [Pick((int(r), -1), int(np.count_nonzero((a64[r] != 0) & ~free[r])), float("nan"), float(k), 0.0,
                  "extra") for r in np.flatnonzero(extra)]
    picks = replace(picks, mismatched=picks.mismatched + int(extra.sum()),
                    wrong=tuple(sorted(wrong + list(picks.wrong), key=lambda p: p.index))[:PICKS_LISTED])
    skip = unusable | extra  # a row whose nonzero set is not k distinct experts: that finding alone
    at = _tol.derive(c.op, sel.at, c.dtypes, c.math_mode, {**xs, name: safe}, c.params, c.online)
    if name not in at:
        raise UsageError(f"op {op.name!r}: its dense selection's at() gave no {name!r}",
                         fix=f"return {{{name!r}: [M, k] values at the picks}} from at(inputs, params)")
    v, Ev = (np.asarray(t, dtype=np.float64) for t in at[name])
    rows = np.arange(M)[:, None]
    exact, E_ = np.zeros((M, E)), np.zeros((M, E))
    exact[rows, safe], E_[rows, safe] = v, Ev
    picked = np.zeros((M, E), dtype=bool)
    picked[rows, safe] = True
    exact = np.where(skip[:, None], np.nan, exact)
    base = _tol.declared_output_ulps(c.op, c.dtypes, c.math_mode, c.overrides)
    errs = _tol.Errors(base={name: base}, E={name: np.where(skip[:, None], 0.0, E_)}, dtypes={name: dtype})
    budget = errs.budget(SimpleNamespace(exact={name: exact}))[name]
    # a free NaN left out of the picks reads as the 0 it stands for (NaN gate times a 0 mask)
    actual = np.where(skip[:, None], np.nan, np.where(free & ~picked, 0.0, a64)).astype(_dt.numpy_dtype(dtype))
    values = compare_tensor(name, actual, None, exact, budget, dtype, errs, None)
    return Comparison((picks, values), tuple(sorted((context or {}).items(), key=lambda kv: kv[0])))
