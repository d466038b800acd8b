"""``Contract``: a behaviour an op leaves to its kernels to declare through a param (a fully masked softmax row's
NaN or zeros), judged strictly once declared."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass(frozen=True)
class Contract:
    """A behaviour a kernel declares through a param (``Op.contract_params``): its ``values`` (the first is what the
    reference does while it is undeclared) and ``when(params) -> bool``, the kernels it is open for (default: all);
    for the others an undeclared param means the first value, strictly."""

    values: tuple
    when: Optional[Callable] = field(default=None, compare=False)

    def open_for(self, params: dict) -> bool:
        return self.when is None or bool(self.when(params))
