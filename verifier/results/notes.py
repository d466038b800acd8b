"""Report notes as typed records: a note is its text (a ``str``, so JSON, ``in`` and ``startswith`` read it as
before) with a ``kind`` that says how reporters treat it, set where the note is made, never guessed from its
words.

Kinds: ``contract`` (a declared or inferred contract: the text report always shows it), ``case-not-run``
(a catalogue case or drawn input left out: refused by supports(), not representable here, or excluded by
a declared contract; or one that ran but whose values no error bound could judge; the text report counts them), ``info`` (everything else: resources per entry,
timings, unused suppressions; listed with --verbose). A plain ``str`` note is ``info``.
"""
from __future__ import annotations

KINDS = ("contract", "case-not-run", "info")


class Note(str):
    kind: str

    def __new__(cls, text: str, kind: str = "info"):
        if kind not in KINDS:
            raise ValueError(f"unknown note kind {kind!r}; one of {', '.join(KINDS)}")
        note = super().__new__(cls, text)
        note.kind = kind
        return note

    def __reduce__(self):  # pickles (a forked child's exception, copies) keep the kind
        return Note, (str(self), self.kind)


def kind(note) -> str:
    return getattr(note, "kind", "info")


def contract(text: str) -> Note:
    return Note(text, "contract")


def case_not_run(text: str) -> Note:
    return Note(text, "case-not-run")
