"""``Selection``: outputs that pick the k largest entries of a score row, judged tie-aware
(verifier.judge.selection)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union


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

    def is_ordered(self, params: dict) -> bool:
        return bool(params.get(self.ordered, True)) if isinstance(self.ordered, str) else bool(self.ordered)
