"""Declared contracts: what a kernel promises about NaN, infinity and subnormal inputs.

A spec takes ``contracts=Contracts(...)`` (re-exported by verifier.spec). Each field left out is
*not declared* (None) and means the default promise: NaN and infinity inputs propagate as IEEE
arithmetic says, subnormals are preserved. One exception: a CUDA spec built with ``-ftz=true`` or
``--use_fast_math`` flushes subnormals, so its undeclared ``subnormals`` is inferred as 'flush', and
the report says so.

- ``nan_inputs="unsupported"`` / ``inf_inputs="unsupported"``: inputs holding NaN (±inf) are not given to
  the kernel; every catalogue case and Hypothesis draw left out is listed in the report as
  ``not checked: declared nan_inputs=unsupported``. Nothing is dropped silently.
- ``subnormals="flush"``: the kernel may flush float32 subnormals (|v| < 2**-126) to signed zero on input
  and output, as nvcc's -ftz=true does. The output is then judged against the reference of the flushed
  inputs with flushed outputs when it does not match the plain reference: a flushing kernel passes, and a
  kernel that keeps subnormals still passes against the plain reference.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from verifier.errors import SpecError
from verifier.results.notes import contract as note

ALLOWED = {
    "nan_inputs": ("propagate", "unsupported"),
    "inf_inputs": ("propagate", "unsupported"),
    "subnormals": ("preserve", "flush"),
}
DEFAULTS = {"nan_inputs": "propagate", "inf_inputs": "propagate", "subnormals": "preserve"}
FLUSH_FLAGS = ("-ftz=true", "--use_fast_math", "-use_fast_math", "--ftz=true")
# -ftz flushes float32 denormals: what lies below float32's smallest normal number.
F32_TINY = float(np.finfo(np.float32).tiny)
NOTE_PREFIX = "contract: "  # notes the text report always shows


@dataclass(frozen=True)
class Contracts:
    """What the kernel promises about special inputs (None: not declared, the default applies).

    nan_inputs: 'propagate' (default: a NaN input gives NaN where IEEE arithmetic puts it) or 'unsupported'
    (inputs holding NaN are not checked, and the report lists them).
    inf_inputs: the same for +inf / -inf inputs (masks included).
    subnormals: 'preserve' (default) or 'flush' (float32 subnormal inputs and outputs may be flushed to
    signed zero, as -ftz=true does; inferred for CUDA specs built with -ftz=true or --use_fast_math).
    """

    nan_inputs: Optional[str] = None
    inf_inputs: Optional[str] = None
    subnormals: Optional[str] = None

    def __post_init__(self):
        for name, allowed in ALLOWED.items():
            v = getattr(self, name)
            if v is not None and v not in allowed:
                raise SpecError(f"Contracts({name}={v!r}): {v!r} is not a {name} contract",
                                fix=f"use {name}=" + " or ".join(repr(a) for a in allowed)
                                    + " (or leave it out: " + repr(DEFAULTS[name]) + ")")


def flush_flag(spec) -> Optional[str]:
    """The extra_flags item of a CUDA spec that makes nvcc flush float32 subnormals, or None."""
    for flag in getattr(spec, "extra_flags", ()) or ():
        if flag in FLUSH_FLAGS:
            return flag
    return None


def effective(spec) -> tuple[Contracts, list[str]]:
    """The contracts the battery applies to ``spec`` (every field set) and the notes saying which were
    inferred rather than declared."""
    declared = getattr(spec, "contracts", None) or Contracts()
    values, notes = {}, []
    for name in ALLOWED:
        values[name] = getattr(declared, name) or DEFAULTS[name]
    flag = flush_flag(spec)
    if declared.subnormals is None and flag is not None:
        values["subnormals"] = "flush"
        notes.append(note(f"{NOTE_PREFIX}subnormals=flush inferred from extra_flags {flag} (declare "
                          "contracts=Contracts(subnormals='preserve') if the kernel keeps subnormals)"))
    return Contracts(**values), notes


def declared_notes(spec) -> list[str]:
    """Report notes of every contract that differs from the default, declared or inferred."""
    c, notes = effective(spec)
    inferred = {n.split("=")[0][len(NOTE_PREFIX):] for n in notes}
    for name in ALLOWED:
        if getattr(c, name) != DEFAULTS[name] and name not in inferred:
            notes.append(note(f"{NOTE_PREFIX}{name}={getattr(c, name)} declared"))
    return notes


def excluded(spec, inputs: dict) -> Optional[str]:
    """Why these inputs are not checked under the spec's declared contracts (None: they are)."""
    c, _ = effective(spec)
    if c.nan_inputs == "propagate" and c.inf_inputs == "propagate":
        return None
    floats = [np.asarray(v) for v in inputs.values() if np.asarray(v).dtype.kind == "f"
              or np.asarray(v).dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2")]
    values = [a.astype(np.float64) for a in floats]
    if c.nan_inputs == "unsupported" and any(np.isnan(a).any() for a in values):
        return "not checked: declared nan_inputs=unsupported"
    if c.inf_inputs == "unsupported" and any(np.isinf(a).any() for a in values):
        return "not checked: declared inf_inputs=unsupported"
    return None


def flushes(spec) -> bool:
    return effective(spec)[0].subnormals == "flush"


def flush(a: np.ndarray) -> np.ndarray:
    """``a`` with values below float32's smallest normal replaced by zero of the same sign (dtype kept)."""
    a = np.asarray(a)
    if a.dtype.kind in "iub":
        return a
    v = a.astype(np.float64)
    tiny = (v != 0) & (np.abs(v) < F32_TINY)
    if not tiny.any():
        return a
    out = a.copy()
    out[tiny] = np.copysign(0.0, v[tiny]).astype(a.dtype)
    return out


def has_subnormals(arrays) -> bool:
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind in "iub":
            continue
        v = np.abs(a.astype(np.float64))
        if ((v != 0) & (v < F32_TINY)).any():
            return True
    return False
