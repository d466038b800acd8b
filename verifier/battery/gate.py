"""The per-case gate: whether one input of one kernel and dtype is run, and if not, why — the same answer for
``verifier check`` (a note, the case not run) and the pytest plugin (the test skipped with the same words).

In order: the kernel's ``supports()`` (refused by design), the Triton interpreter's known gaps (what the
interpreter cannot represent is not the kernel's fault; the compiled path on a GPU checks it), the declared
contracts (inputs holding NaN / inf a kernel declares unsupported). Nothing is dropped silently: each reason is
said where the case would have run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from verifier.declare import contracts as _contracts

REFUSED, INTERPRETER, CONTRACT = "refused", "interpreter", "contract"


@dataclass(frozen=True)
class Closed:
    """Why a case is not run: ``kind`` (REFUSED, INTERPRETER, CONTRACT) and the words said for it."""

    kind: str
    reason: str  # the bare reason ("not checked: declared nan_inputs=unsupported", supports()'s words, ...)
    text: str  # said of the case: "case NAME (MxN) refused by design: ...", "case NAME not run: ...", ...


def before_inputs(spec, dt, name: str, M: int, N: int) -> Optional[Closed]:
    """The gate before the inputs are drawn: the kernel's supports() (a UserCodeError propagates)."""
    reason = spec.check_supported(M, N, dt)
    if reason is not None:
        return Closed(REFUSED, reason, f"case {name} ({M}x{N}) refused by design: {reason}")
    return None


def after_inputs(spec, dt, name: str, xs: dict, device: str) -> Optional[Closed]:
    """The gate on the drawn inputs: interpreter caveats, then declared contracts."""
    caveat = interpreter_caveat(spec, dt, xs, device)
    if caveat:
        return Closed(INTERPRETER, caveat, f"case {name} not run: {caveat}")
    contract = _contracts.excluded(spec, xs)
    if contract:
        return Closed(CONTRACT, contract, f"case {name} {contract}")
    return None


def interpreter_caveat(spec, dt, xs, device) -> Optional[str]:
    """Inputs the Triton interpreter cannot represent faithfully (so a mismatch would be the
    interpreter's, not the kernel's). tests/test_interpreter_caveats.py pins each fact, so a Triton
    release that fixes it fails that test and the caveat can go."""
    if spec.kind != "triton" or device != "cpu" or dt.input != "bfloat16":
        return None
    import ml_dtypes

    tiny = float(ml_dtypes.finfo(ml_dtypes.bfloat16).smallest_normal)
    for name, v in xs.items():
        a = np.abs(v.astype(np.float64))
        if np.any((a > 0) & (a < tiny)):
            return (f"input {name!r} holds bf16 subnormals, which the Triton interpreter decodes wrongly "
                    "(6.5e-39 loads as 1.3e-39); run compiled on a GPU to check them")
    return None
