"""``Selection``: outputs that pick the k largest entries of a score row, judged tie-aware
(verifier.judge.selection)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import numpy as np

from verifier.errors import SpecError

KEEP_TIES = ("keep_all", "exactly_k")  # KeepTopK's ties param: what a kernel does with ties at the k-th largest


@dataclass(frozen=True)
class Selection:
    """Outputs that pick the k largest entries of a score row (MoE routing's top-k), judged tie-aware
    (verifier.judge.selection) instead of element by element: ``indices`` names the integer output ``[M, k]`` of
    the picks; ``scores(inputs, params) -> [M, E]`` (float64 torch, as a reference) is what the picks rank, largest
    first; ``at(inputs, params) -> {output: tensor}`` gives every other output at the kernel's own picks, which it
    finds in ``inputs[indices]`` (int64), e.g. the gate values there, renormalized over them. Both are derived
    (verifier.ops.derived), so the band a tie or near tie may fall either way is the kernel's own error bound."""

    indices: str
    scores: Callable = field(repr=False, compare=False)
    at: Callable = field(repr=False, compare=False)
    # whether the picks come largest first: True, False (any order: torch.topk(sorted=False)), or the name of the
    # op's bool param that says so (topk_softmax's 'sorted')
    ordered: Union[bool, str] = True
    # grouped selection (DeepSeek-V2 / V3 routing): groups(params) -> None or (n_group, topk_group, group_score
    # 'max' / 'top2_sum'): the picks are the top k over the experts of the topk_group best groups
    # (verifier.judge.group_choice)
    groups: Optional[Callable] = field(default=None, repr=False, compare=False)
    # dense combine weights (GShard / Switch / DeepSpeed routers): ``indices`` names a float [M, E] output holding
    # the values at the picks and 0 elsewhere, whose picks are read off it (verifier.judge.dense_selection); ``at``
    # then gives that output's [M, k] values at the picks it finds in inputs[indices]
    dense: bool = False
    # a NaN score: 'free' (picked or not, anywhere: a router's gates, where kernels differ) or 'largest' (torch.topk
    # ranks NaN above every number: a NaN-scored entry must be among the picks, first; a torch.topk replacement)
    nan: str = "free"

    def is_ordered(self, params: dict) -> bool:
        if self.dense:  # a dense row has no order
            return False
        return bool(params.get(self.ordered, True)) if isinstance(self.ordered, str) else bool(self.ordered)


@dataclass(frozen=True)
class KeepTopK:
    """An output that keeps the k largest entries of each row of ``x`` in place and writes ``fill`` everywhere else
    (sampling's top-k filters: renormalized probabilities, masked logits), judged tie-aware
    (verifier.judge.kept) instead of element by element. The kernel's kept set is read off its output (an element
    not equal to ``fill``) and checked against the exact k-th largest of x under the op's ``ties`` param
    ('keep_all': every element >= it; 'exactly_k': every element above it and as many tied ones as make k); an
    element equal to ``fill`` in x reads the same kept or not and is left out of that check. ``at(inputs, params)
    -> {output: tensor}`` gives the output for the kept set in ``inputs['kept']`` (int64 0 / 1, [M, N]); it is
    derived (verifier.ops.derived), so its budget is the kernel's own error bound."""

    output: str
    fill: float
    at: Callable = field(repr=False, compare=False)


# --------------------------------------------------------------------------- KeepTopK's kept sets

def check_params(p: dict, what: str) -> int:
    k = p["k"]
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise SpecError(f"{what}: k={k!r}", fix="give an int k >= 1 (k >= N keeps every element)")
    if p["ties"] not in KEEP_TIES:
        raise SpecError(f"{what}: ties={p['ties']!r}",
                        fix=f"use one of {', '.join(map(repr, KEEP_TIES))} (what the kernel does with ties at the "
                            "k-th largest)")
    return k


def kth_largest(x: np.ndarray, k: int) -> np.ndarray:
    """Per row, the k-th largest of x as torch.topk orders it (NaN largest); for k >= N there is none (NaN,
    unused: every element is kept)."""
    import torch

    M, N = x.shape
    if k >= N or N == 0:
        return np.full(M, np.nan)
    return torch.topk(torch.as_tensor(np.asarray(x, dtype=np.float64)), k, dim=-1).values[:, -1].numpy()


def kept_sets(x: np.ndarray, k: int) -> tuple:
    """(must, allowed): the elements every right kept set holds (above the k-th largest) and those it may hold
    (at or above it); both all-True for k >= N."""
    M, N = x.shape
    if k >= N:
        every = np.ones((M, N), dtype=bool)
        return every, every
    t = kth_largest(x, k)[:, None]
    with np.errstate(invalid="ignore"):
        return x > t, x >= t


def canonical_kept(x: np.ndarray, p: dict) -> np.ndarray:
    """The reference's kept set: keep_all, every element >= the k-th largest; exactly_k, those above it and the
    first tied ones (index order) up to k (a NaN takes a slot: tie_room)."""
    k = check_params(p, "top-k filter")
    must, allowed = kept_sets(x, k)
    if p["ties"] == "keep_all":
        return allowed
    tied = allowed & ~must
    room = tie_room(x, must, k)[:, None]
    return must | (tied & (np.cumsum(tied, axis=1) <= room))


def tie_room(x: np.ndarray, must: np.ndarray, k: int) -> np.ndarray:
    """Per row, how many ties at the k-th largest exactly_k keeps: k less the elements above it and the NaNs (each
    a slot of the k, as torch.topk ranks it, never kept)."""
    return np.maximum(k - must.sum(axis=1) - np.isnan(x).sum(axis=1), 0)


# --------------------------------------------------------------------------- ArgMax

ARGMAX_TIES = ("first", "any")  # ArgMax's ties param: torch.argmax's first index of the maximum, or any tied index


@dataclass(frozen=True)
class ArgMax:
    """An integer ``[M]`` output holding, per row, the column of the largest element of x (``torch.argmax(x,
    dim=-1)``: greedy sampling), judged exactly and tie-aware (verifier.judge.argmax) under the op's ``ties`` param:
    'first' (torch's first index of the maximum) or 'any' (any index whose x equals the row's maximum). A NaN is the
    maximum (torch): a row holding one must give a NaN's index (the first one under 'first'); a kernel that ignores
    NaN declares ``Contracts(nan_inputs='unsupported')``. ``value``: an optional ``[M]`` output holding x at the
    pick (``torch.max(x, dim=-1)``'s values), compared exactly at the kernel's own pick."""

    index: str
    value: Optional[str] = None


def check_argmax(where: str, op) -> None:
    """An op's ``argmax=`` rule against its tensors and params (a SpecError naming what to declare)."""
    rule = op.argmax
    if not isinstance(rule, ArgMax):
        raise SpecError(f"{where}: argmax must be an ArgMax(...), got {type(rule).__name__}",
                        fix="write argmax=ArgMax(index='index')")
    dtype = op.out_fixed.get(rule.index) if rule.index in op.outputs else None
    if op.dims_of(rule.index) != ("M",) or not str(dtype or "").startswith("int"):
        raise SpecError(f"{where}: argmax names {rule.index!r}, not an integer [M] output",
                        fix="declare outputs={'index': Tensor('M', dtype='int64')} (or a str param holding the dtype)")
    if rule.value is not None and rule.value not in tuple(op.outputs) + tuple(op.optional_outputs):
        raise SpecError(f"{where}: argmax's value {rule.value!r} is not an output",
                        fix="declare it, e.g. outputs={..., 'value': Tensor('M', optional=True)}")
    if op.params.get("ties") not in ARGMAX_TIES:
        raise SpecError(f"{where}: an op with argmax= needs a param 'ties' in {ARGMAX_TIES}",
                        fix="params={'ties': 'first', ...}")
