"""What the static checks report (``Issue``: a class, a severity, two program points) and what they are told
about an entry's launches (``EntryFacts``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

CLASSES = ("divergent-barrier", "shared-race", "inactive-lanes", "global-race", "not-followed")


@dataclass(frozen=True)
class Issue:
    cls: str  # one of CLASSES
    severity: str  # 'error' | 'warning'
    message: str
    at: int  # instruction index of the first program point
    other: Optional[int] = None  # the second program point
    other_role: str = ""  # what the second point is ('branch', 'early exit', 'read', ...)


@dataclass(frozen=True)
class EntryFacts:
    """What the analysis needs to know about how an entry is launched."""

    blocks: tuple  # distinct block shapes (x, y, z) of its launches
    max_grid_blocks: int  # most blocks in one launch


def short_name(name: str) -> str:
    """A shared variable's source name: _ZZ...E7scratch -> scratch."""
    m = re.search(r"E(\d+)([A-Za-z_]\w*)$", name)
    if m and len(m.group(2)) == int(m.group(1)):
        return m.group(2)
    return name
