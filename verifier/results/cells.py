"""A cell of the verdict table: the outcome of one check for one dtype of one kernel, typed.

``Cell(status, reason)``: status ``pass``, ``FAIL``, ``warn`` (passed, but something undeclared speaks) or
``skipped`` (with the reason nothing ran through the check). ``str(cell)`` is the form the JSON schema keeps
(``"pass"``, ``"skipped(no CUDA GPU: ...)"``) and :meth:`Cell.parse` reads it back; a cell compares equal to
that string, so a saved report and a live one read the same.
"""
from __future__ import annotations

from dataclasses import dataclass

STATUSES = ("pass", "FAIL", "warn", "skipped")
_RANK = {"skipped": 0, "pass": 1, "warn": 1, "FAIL": 2}  # merging two runs' cells: FAIL over pass over skipped


@dataclass(frozen=True, eq=False)
class Cell:
    status: str
    reason: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown cell status {self.status!r}; one of {', '.join(STATUSES)}")
        if (self.status == "skipped") != bool(self.reason):
            raise ValueError("a skipped cell has a reason, and only a skipped cell has one")

    @property
    def skipped(self) -> bool:
        return self.status == "skipped"

    @property
    def rank(self) -> int:
        return _RANK[self.status]

    def __str__(self) -> str:
        return f"skipped({self.reason})" if self.skipped else self.status

    def __repr__(self) -> str:
        return f"Cell({str(self)!r})"

    def __eq__(self, other) -> bool:
        if isinstance(other, Cell):
            return (self.status, self.reason) == (other.status, other.reason)
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    @classmethod
    def parse(cls, text: str) -> "Cell":
        """The cell ``str(cell)`` wrote (a saved report's ``checks`` value); a malformed one is a ValueError."""
        text = str(text)
        if text.startswith("skipped(") and text.endswith(")") and len(text) > len("skipped()"):
            return cls("skipped", text[len("skipped("):-1])
        return cls(text)


PASS, FAIL, WARN = Cell("pass"), Cell("FAIL"), Cell("warn")


def skipped(reason: str) -> Cell:
    """A skipped cell and why nothing ran through its check."""
    return Cell("skipped", reason)


def marked(old: Cell | None, new: Cell) -> Cell | None:
    """The cell after ``new`` is marked over ``old`` in one run: FAIL stays, warn yields only to FAIL, and a skip
    is never overwritten by a pass (nothing checked never reads as a pass); None: keep ``old``."""
    if old == FAIL or (old == WARN and new != FAIL):
        return None
    if new in (FAIL, WARN) or old is None or (old.skipped and new != PASS):
        return new
    return None


def merged(old: Cell | None, new: Cell) -> Cell:
    """The cell of one kernel in two results merged (`verifier check` and `verifier sanitize` of one change)."""
    return new if old is None or new.rank > old.rank else old
