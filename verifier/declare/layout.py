"""What a five-parameter ``launches(M, N, dt, params, layout)`` sees of a call: each tensor's alignment and row
stride, and what a host reads of the device (its SM count, the shared memory a block may opt in to), as
``LaunchLayout``; from the real tensors and GPU on a launch, from the case's model where none exist yet."""
from __future__ import annotations

import inspect
from typing import Optional

from verifier.errors import SpecError

MAX_ALIGN = 256  # LaunchLayout.alignment's ceiling: what cudaMalloc guarantees and more than any vector needs


def alignment_of(address: int) -> int:
    """The largest power of two <= MAX_ALIGN dividing ``address``."""
    address = int(address)
    return MAX_ALIGN if address % MAX_ALIGN == 0 else address & -address


# What a host reads of the device to pick a path or a grid (ggml: the SM count picks sum_rows' block size and the
# split-row softmax's grid, the opt-in shared memory whether its softmax keeps the row in shared memory): where no
# GPU call is made (the build step, lint, the gate), those of the smallest GPU the CPU build targets, an sm_80 A100.
MODEL_SM_COUNT, MODEL_SMEM_OPTIN = 108, 163 * 1024


class LaunchLayout:
    """Where a call's tensors lie, as a five-parameter ``launches(M, N, dt, params, layout)`` sees them:
    ``alignment(name)`` the bytes its first element is aligned to (the largest power of two <= 256 dividing its
    address), ``stride(name)`` the row stride of a 2-D tensor in elements. Built from the real tensors where they
    exist (each launch), and from the case's layout where they do not yet (build, lint, the gate). ``sm_count``
    and ``smem_optin`` (bytes of shared memory a block may opt in to): the GPU's on a launch, else the model
    device's (MODEL_SM_COUNT, MODEL_SMEM_OPTIN)."""

    def __init__(self, alignments: dict, strides: dict, what: str = "this call", sm_count: Optional[int] = None,
                 smem_optin: Optional[int] = None):
        self._alignments = dict(alignments)
        self._strides = dict(strides)
        self.what = what
        self.asked: set = set()  # the tensors whose stride launches() read: it handles their rows at any stride
        self.sm_count = MODEL_SM_COUNT if sm_count is None else int(sm_count)
        self.smem_optin = MODEL_SMEM_OPTIN if smem_optin is None else int(smem_optin)

    @property
    def tensors(self) -> tuple:
        return tuple(self._alignments)

    def _known(self, name: str) -> None:
        if name not in self._alignments:
            raise SpecError(f"layout: {name!r} is not a tensor of {self.what}",
                            fix=f"name one of {sorted(self._alignments)}")

    def alignment(self, name: str) -> int:
        self._known(name)
        return self._alignments[name]

    def stride(self, name: str) -> int:
        self._known(name)
        self.asked.add(name)
        if name not in self._strides:
            raise SpecError(f"layout.stride({name!r}): {name!r} is not a 2-D tensor: it has no row stride",
                            fix=f"ask for the stride of one of {sorted(self._strides)}")
        return self._strides[name]

    def aligned(self, nbytes: int, names=None) -> bool:
        """Every tensor (or those of ``names``) aligned to ``nbytes``: the usual host test for a vector path."""
        return all(self.alignment(n) % nbytes == 0 for n in (names or self._alignments))

    def __repr__(self):
        return f"LaunchLayout(alignments={self._alignments}, strides={self._strides})"


def takes_layout(fn) -> bool:
    """Whether a launches function names a fifth positional parameter (``layout``). A bare ``*args`` does not
    count: a wrapper passing its arguments on to a four-parameter function would break on a fifth."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    positional = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 5
