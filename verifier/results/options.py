"""What one run is asked to do (Options), and the command line that re-runs a piece of it (repro_line).

A leaf: the battery, its steps, the isolate / forked children, the sanitizer and the pytest plugin all read
these; it imports nothing of theirs.
"""
from __future__ import annotations

import shlex
import zlib
from dataclasses import dataclass
from typing import Optional

from verifier.errors import UsageError

PSEUDO_CASES = ("refusal", "determinism")  # --case values that run one check instead of one input


@dataclass(frozen=True)
class Options:
    budget: str = "ci"
    seed: int = 0
    device: str = "cpu"  # resolved: 'cpu' or 'cuda'
    case: Optional[str] = None  # only this catalogue case (repro)
    dtype: Optional[str] = None  # only this dtype tag (repro)
    sanitize: bool = False
    # compute-sanitizer tools of a sanitized run (None: all four); the detection matrix runs only a defect's declared one
    sanitize_tools: Optional[tuple] = None
    triton_mode: Optional[str] = None
    timeout: Optional[float] = None  # seconds per kernel in a child process (None: $VERIFIER_KERNEL_TIMEOUT or 600)


    def __post_init__(self):
        if self.sanitize_tools is not None:  # a list after a JSON round trip (the isolate child's request)
            object.__setattr__(self, "sanitize_tools", tuple(self.sanitize_tools))


def derived_seed(seed: int, *parts) -> int:
    return zlib.crc32(":".join(map(str, (seed,) + parts)).encode()) & 0x7FFFFFFF


def repro_line(spec, opts: Options, tag: str = "", case: str = "") -> str:
    """The ``verifier check`` command line that re-runs this kernel (narrowed to dtype ``tag`` and
    case ``case`` when given) with the same budget (a case's shape depends on it), seed and device."""
    parts = ["verifier", "check", spec.origin or "<spec.py>", "--kernel", spec.name]
    if tag:
        parts += ["--dtype", tag]
    if case:
        parts += ["--case", case]
    parts += ["--budget", opts.budget, "--seed", str(opts.seed), "--device", opts.device]
    return " ".join(shlex.quote(p) for p in parts)
