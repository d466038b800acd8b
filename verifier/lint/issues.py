"""What the static checks report (``Issue``: a class, a severity, two program points) and what they are told
about an entry's launches (``EntryFacts``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

CLASSES = ("divergent-barrier", "shared-race", "inactive-lanes", "global-race", "offset-wrap", "not-followed",
           "unwritten-shared")


@dataclass(frozen=True)
class Issue:
    cls: str  # one of CLASSES
    severity: str  # 'error' | 'warning' | 'info' (not a defect within what the spec supports) | 'note' (a report note)
    message: str
    at: int  # instruction index of the first program point
    other: Optional[int] = None  # the second program point
    other_role: str = ""  # what the second point is ('branch', 'early exit', 'read', ...)
    blocks: tuple = ()  # the block shapes (x, y, z) it was found at; () where it does not depend on one
    skipped: tuple = ()  # a note's: the instructions it says were not analysed


PROBE = "probe"  # LargeLaunch.case of a launch at a probe shape


@dataclass(frozen=True)
class LargeLaunch:
    """One launch of an entry with its grid and argument values: at a large shape the spec supports
    (verifier.inputs.large_family's: M·N past 2^31 or 2^32 elements, rows 2^31 + 64 apart), what the offset check
    evaluates a 32-bit offset's range with; at a probe shape (case ``PROBE``), what verifier.lint.gridstride decides
    a grid-stride loop's trip count with."""

    case: str  # the large case's name, or PROBE
    M: int
    N: int
    grid: tuple  # (x, y, z)
    block: tuple  # (x, y, z)
    args: tuple  # per kernel parameter: its integer value, a struct's ((byte offset, value), ...), or None
    labels: tuple  # per kernel parameter: how the spec names it ('N', 'x.stride', ...)
    nulls: frozenset = frozenset()  # (parameter, byte offset) of its null pointers (verifier.lint.nulls)


@dataclass(frozen=True)
class EntryFacts:
    """What the analysis needs to know about how an entry is launched."""

    blocks: tuple  # distinct block shapes (x, y, z) of its launches
    max_grid_blocks: int  # most blocks in one launch
    large: tuple = ()  # LargeLaunch of this entry at the large shapes the spec supports
    refused: str = ""  # why the spec refuses the large shapes ('' unless it refuses all of them)
    unbound: str = ""  # why the launches cannot be made at a large shape supports() accepts ('' if any could)
    nulls: tuple = ()  # (parameter, byte offset) of the pointers null in every launch of it (verifier.lint.nulls)
    labels: tuple = ()  # per kernel parameter: how the spec's first launch of it names it ('N', 'x.stride', ...)
    probes: tuple = ()  # LargeLaunch (case PROBE) of each distinct launch of it at the probe shapes

    def launches_at(self, block: tuple) -> tuple:
        """Every launch of the entry (probe and large shapes) with this block shape."""
        return tuple(ll for ll in self.probes + self.large if tuple(ll.block) == tuple(block))


def short_name(name: str) -> str:
    """A shared variable's source name: _ZZ...E7scratch -> scratch."""
    m = re.search(r"E(\d+)([A-Za-z_]\w*)$", name)
    if m and len(m.group(2)) == int(m.group(1)):
        return m.group(2)
    return name
