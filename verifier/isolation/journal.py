"""What an isolation child has completed, kept on disk as it goes: a child that dies keeps it.

A child (forked, verifier.isolation.forked, or spawned, verifier.isolation.child) checks one kernel into a report
it hands to the battery (verifier.battery.check_kernel). Before each step it announces (a catalogue case, a drawn
shape, refusal, determinism, a config), ``Journal.step`` writes that report whole, in the one serialization of a
kernel report (verifier.results.serialize.kernel_entry) plus its judged-input counts, to a file beside its answer:
written to a temporary name, then renamed, so a child killed mid-write leaves the previous snapshot intact.

When the child dies (a segfault, an abort, a CUDA fault) or is killed at its timeout, the parent reads the last
snapshot back (``read_partial``): the findings, cells and notes of every step the child completed before the one it
died in, to which verifier.isolation.children adds the crash / timeout finding and what never ran
(verifier.battery.unfinished).
"""
from __future__ import annotations

import json
import os
from typing import Optional

from verifier.errors import UsageError
from verifier.results.kernel import KernelReport
from verifier.results.serialize import kernel_entry, read_kernel

FILE = "partial.json"  # the snapshot's name in the child's temporary folder
_COUNTS = ("judged", "vacuous")  # KernelReport's per-dtype input counts, which kernel_entry does not keep


class Journal:
    """The child's side: ``step()`` before each announced step keeps ``report`` as it stands at ``path``."""

    def __init__(self, path: str, report: KernelReport):
        self.path, self.report, self.last = path, report, None

    def step(self) -> None:
        entry = kernel_entry(self.report)
        entry.update({k: dict(getattr(self.report, k)) for k in _COUNTS})
        text = json.dumps(entry, default=str)
        if text == self.last:  # nothing completed since the last step (its own announcement): nothing to keep
            return
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w") as fh:
                fh.write(text)
            os.replace(tmp, self.path)
            self.last = text
        except OSError:  # a full disk: a crash then keeps less, the check itself goes on
            pass


def read_partial(path: str, spec, device: str) -> Optional[KernelReport]:
    """The report a dead child completed before it died, or None (it died before its first step, or the file is
    unreadable: the crash report then holds only the crash, as it did before the journal)."""
    try:
        with open(path) as fh:
            entry = json.load(fh)
        report = read_kernel(entry, f"partial report of the child checking {spec.name}", spec=spec, device=device)
    except (OSError, ValueError, TypeError, UsageError):
        return None
    for k in _COUNTS:
        counts = entry.get(k)
        if isinstance(counts, dict):
            setattr(report, k, {str(t): int(n) for t, n in counts.items() if isinstance(n, int)})
    return report


__all__ = ["FILE", "Journal", "read_partial"]
