"""Exact, tie-aware comparison of an op whose output is each row's argmax (``Op(argmax=ArgMax(index, value))``:
``row_argmax``, greedy sampling). Element by element against torch.argmax, a kernel returning another of several
tied maxima would fail under a declared 'any', and a wrong pick would be told only "value mismatch".

Per row of x (its values as the kernel reads them: the input's own, so every comparison is exact, no ULP band):

* the index is an integer in [0, N); a row of only -inf gives 0 (torch), or -1 where the kernel declares
  ``neg_inf_rows='minus_one'`` (ggml's sentinel: its scan starts at -FLT_MAX and keeps -1 when nothing is above);
* a row holding a NaN: the index is a NaN's (torch ranks NaN above every number), the first NaN under
  ``ties='first'``; a kernel ignoring NaN declares ``Contracts(nan_inputs='unsupported')`` and never sees such rows;
* otherwise x[index] equals the row's maximum (-0 equals +0, as IEEE compares them); under ``ties='first'`` the
  index is also the first such column (torch.argmax);
* ``value`` (optional): x at the kernel's own pick, rounded once into the output dtype, compared exactly (a row whose
  index is wrong gets that finding alone).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from verifier import dtypes as _dt
from verifier.errors import UsageError
from verifier.judge.compare import Comparison, TensorComparison, compare_tensor
from verifier.results.findings import Finding

__all__ = ["WrongIndex", "ArgMaxComparison", "compare_argmax"]

LISTED = 5


@dataclass(frozen=True)
class WrongIndex:
    """One row's wrong index: what the kernel wrote, x there, the row's maximum and its first column, and why."""

    index: tuple  # (row,)
    got: int
    value: float  # x[row, got] (NaN when out of range)
    best: float  # the row's maximum (NaN for a row holding NaN)
    first: int  # the first column holding it
    why: str  # 'range', 'below' (not a maximum), 'later' (a tie, but not the first: ties='first'), 'nan'

    def describe(self) -> str:
        row = self.index[0]
        if self.why == "empty":
            return (f"row {row}: index {self.got} for a row of only -inf, where the declared neg_inf_rows='minus_one' "
                    "wants -1")
        if self.why == "range":
            return f"row {row}: index {self.got} is outside [0, N)"
        if self.why == "nan":
            return (f"row {row}: index {self.got} holds {self.value!r}, but the row holds a NaN (first at column "
                    f"{self.first}), the maximum as torch.argmax ranks it; a kernel that ignores NaN declares "
                    "contracts=Contracts(nan_inputs='unsupported')")
        if self.why == "later" and self.best != self.best:
            return (f"row {row}: index {self.got} is a NaN, but the row's first NaN is at column {self.first}: "
                    "ties='first' (torch.argmax) wants the first; a kernel returning any NaN's index declares "
                    "params={'ties': 'any'}")
        if self.why == "later":
            return (f"row {row}: index {self.got} ties the maximum {self.best!r}, whose first column is {self.first}: "
                    "ties='first' (torch.argmax) wants the first; a kernel returning any tied index declares "
                    "params={'ties': 'any'}")
        return (f"row {row}: index {self.got} holds {self.value!r}, below the row's maximum {self.best!r} (first at "
                f"column {self.first})")


@dataclass(frozen=True)
class ArgMaxComparison(TensorComparison):
    """The index output: ``wrong`` lists the first wrong rows; ``mismatched`` counts them all."""

    wrong: tuple = ()

    def message(self) -> str:
        head = "right (exact, tie-aware)" if self.values_ok else "NOT each row's argmax"
        lines = [f"Output {self.name!r} ({self.dtype}, {self.shape[0]} rows) is {head}:",
                 f"  Wrong rows: {self.mismatched} / {self.numel} ({self.percent:.1f}%)"]
        return "\n".join(lines + [f"    {w.describe()}" for w in self.wrong])

    def findings(self, base: dict) -> list:
        if not self.mismatched:
            return []
        return [Finding(check="value", score=float("inf"), **base,
                        message=f"{self.name}: {self.mismatched}/{self.numel} rows' argmax wrong (exact, tie-aware); "
                                f"first: {self.wrong[0].describe()}")]

    def relabeled(self, index) -> "ArgMaxComparison":
        return replace(super().relabeled(index), wrong=tuple(replace(w, index=index(w.index)) for w in self.wrong))


def check_rows(x: np.ndarray, idx: np.ndarray, ties: str, neg_inf_rows=None) -> tuple:
    """(wrong rows listed, bad [M]) for the int64 picks ``idx`` of the float64 rows ``x`` under ``ties``; a row of
    only -inf wants -1 under ``neg_inf_rows='minus_one'`` (ggml's sentinel: no element above -FLT_MAX)."""
    M, N = x.shape
    empty = (x == -np.inf).all(axis=1) if neg_inf_rows == "minus_one" else np.zeros(M, dtype=bool)
    inrange = (idx >= 0) & (idx < N)
    safe = np.where(inrange, idx, 0)
    at = x[np.arange(M), safe]
    nan = np.isnan(x)
    has_nan = nan.any(axis=1)
    best = np.where(has_nan, np.nan, np.max(np.where(nan, -np.inf, x), axis=1))
    with np.errstate(invalid="ignore"):
        is_best = np.where(has_nan[:, None], nan, x == best[:, None])  # -0 == +0: tied
    first = np.argmax(is_best, axis=1)
    ok = inrange & is_best[np.arange(M), safe]
    if ties == "first":
        ok &= safe == first
    ok = np.where(empty, idx == -1, ok)
    why = np.where(empty, "empty", np.where(~inrange, "range", np.where(
        has_nan & ~np.isnan(at), "nan", np.where(is_best[np.arange(M), safe], "later", "below"))))
    wrong = tuple(WrongIndex((int(r),), int(idx[r]), float(at[r]) if inrange[r] else float("nan"), float(best[r]),
                             int(first[r]), str(why[r])) for r in np.flatnonzero(~ok)[:LISTED])
    return wrong, ~ok


def compare_argmax(op, c, xs: dict, outputs: dict, context=None) -> Comparison:
    """The argmax output of op ``op`` (verifier.ops.model.Op with ``argmax``) under criteria ``c``
    (verifier.judge.Criteria), and its value output when the kernel writes one."""
    rule = op.argmax
    name = rule.index
    dtype = op.output_dtype(name, c.dtypes, c.params)
    a = _dt.to_numpy(outputs[name])
    got = _dt.canonical(a.dtype)
    if got != dtype:
        raise UsageError(f"output {name!r} is {got} but the op declares {dtype}",
                         fix=f"write the index as {dtype}, or declare the kernel's params={{'index_dtype': '{got}'}}")
    x = np.asarray(xs["x"], dtype=np.float64)
    M = x.shape[0]
    if a.shape != (M,):
        raise UsageError(f"output {name!r} has shape {a.shape}, expected {(M,)}", fix="pass the [M] index")
    idx = a.astype(np.int64)
    wrong, bad = check_rows(x, idx, c.params["ties"], c.params.get("neg_inf_rows"))
    tensors = (ArgMaxComparison(name=name, dtype=dtype, shape=(M,), numel=M, mismatched=int(bad.sum()),
                                nonfinite_mismatched=0, max_ulps=0.0, worst=(), nonfinite=(), wrong=wrong),)
    if rule.value is not None and rule.value in outputs:
        vdt = op.output_dtype(rule.value, c.dtypes, c.params)
        safe = np.where(bad | (idx < 0), 0, idx)  # -1: a declared empty row, its value x[0] (-inf)
        exact = np.where(bad, np.nan, x[np.arange(M), safe])  # a row whose index is wrong: that finding alone
        v = _dt.to_numpy(outputs[rule.value])
        if _dt.canonical(v.dtype) != vdt:
            raise UsageError(f"output {rule.value!r} is {_dt.canonical(v.dtype)} but the kernel's output dtype is "
                             f"{vdt}", fix=f"pass the kernel's output as written, in {vdt}")
        actual = np.where(bad, np.nan, v.astype(np.float64)).astype(_dt.numpy_dtype(vdt))
        tensors += (compare_tensor(rule.value, actual, None, exact, 0.0, vdt),)
    return Comparison(tensors, tuple(sorted((context or {}).items(), key=lambda kv: kv[0])))
