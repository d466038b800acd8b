"""Cross entropy's label conventions, shared by the ops (verifier/ops/cross_entropy.py) and their references
(references/cross_entropy*.py):

* the logits' ``scale`` (validated here, beside the labels' params: one home for the variant params' checks);
* which rows are ignored: label == ``ignore_index`` (PyTorch's -100 by default); ``ignore_index=None`` declares a
  kernel with no ignore index at all (Megatron's vocab-parallel loss masks rows downstream): no row is drawn ignored
  and every label is a class;
* where ``label_smoothing`` e puts its mass: ``smoothing_classes='all'`` (PyTorch: e/N on every class, the target's
  included, so the target keeps 1 - e + e/N) or ``'others'`` (fairseq, Megatron, NeMo: e/(N - 1) on each of the
  N - 1 other classes, the target keeps exactly 1 - e). The second is PyTorch's formula with e' = e·N/(N - 1):
  (1 - e')·nll + e'·mean_j(-log p_j), which is how both the reference and the budget evaluate it.
"""
from __future__ import annotations

import numpy as np

from verifier.errors import SpecError

SMOOTHING_CLASSES = ("all", "others")


def ignore_index(params):
    """The declared ignore index (an int), or None (no ignore index)."""
    ii = params.get("ignore_index", -100)
    if ii is not None and (isinstance(ii, bool) or not isinstance(ii, (int, np.integer))):
        raise SpecError(f"cross_entropy: ignore_index={ii!r} is not an int",
                        fix="declare the label that marks a skipped row (PyTorch's -100), or None for a kernel with "
                            "no ignore index")
    return None if ii is None else int(ii)


def logit_scale(params) -> float:
    """The declared ``scale`` the logits are multiplied by first (1: none)."""
    s = params.get("scale", 1.0)
    if isinstance(s, bool) or not isinstance(s, (int, float, np.floating)) or not np.isfinite(s) or s == 0:
        raise SpecError(f"cross_entropy: scale={s!r} is not a finite nonzero number",
                        fix="declare the factor the kernel multiplies the logits by (flash-attn's logit_scale), or "
                            "leave it out (1)")
    return float(s)


def ignored_rows(labels, params) -> np.ndarray:
    """[M] bool: the rows whose label is the ignore index (none under ignore_index=None)."""
    t = np.asarray(labels).astype(np.int64)
    ii = ignore_index(params)
    return np.zeros(t.shape, dtype=bool) if ii is None else t == int(ii)


def smoothing(params, N: int) -> float:
    """The e of PyTorch's formula that gives the declared smoothing: label_smoothing itself ('all'), or
    label_smoothing·N/(N - 1) ('others'; 0 for a row of one class, which has no other class)."""
    eps = float(params.get("label_smoothing", 0.0) or 0.0)
    where = params.get("smoothing_classes", "all")
    if where not in SMOOTHING_CLASSES:
        raise SpecError(f"cross_entropy: smoothing_classes={where!r}",
                         fix="use 'all' (PyTorch: e/N on every class) or 'others' (fairseq, Megatron: e/(N - 1) on "
                             "the classes other than the target)")
    if where == "others" and eps > 0:
        return eps * N / (N - 1) if N > 1 else 0.0
    return eps
