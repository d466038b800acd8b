"""Declared contracts: what a kernel promises about NaN, infinity and subnormal inputs, and the memory layouts
it takes (row stride, pointer alignment).

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
- ``layout="contiguous"``: the kernel takes only rows stored back to back (row stride = N); the strided cases
  (rows ``N + 64`` elements apart, as a slice ``qkv[:, :N]`` lays them out) are listed as ``not checked: declared
  layout=contiguous``. The default, ``"strided"``, promises any row stride >= N (CUDA: the one its launches pass).
- ``alignment=16`` (bytes): the kernel takes only tensors starting at a multiple of 16 bytes; the unaligned case
  (every tensor one element past a 16-byte boundary, as a view into a larger buffer can start) is listed as
  ``not checked: declared alignment=16``. The default is element alignment, all a PyTorch view guarantees.
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
    "layout": ("strided", "contiguous"),
    "alignment": ("element", 2, 4, 8, 16),
}
DEFAULTS = {"nan_inputs": "propagate", "inf_inputs": "propagate", "subnormals": "preserve", "layout": "strided",
            "alignment": "element"}
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
    layout: 'strided' (default: rows may lie any stride >= N apart) or 'contiguous' (row stride N only).
    alignment: 'element' (default: a tensor may start at any multiple of its element size) or 2, 4, 8, 16 (bytes
    its tensors' first elements are aligned to).
    """

    nan_inputs: Optional[str] = None
    inf_inputs: Optional[str] = None
    subnormals: Optional[str] = None
    layout: Optional[str] = None
    alignment: Optional[object] = None

    def __post_init__(self):
        for name, allowed in ALLOWED.items():
            v = getattr(self, name)
            if v is not None and (v not in allowed or isinstance(v, bool)):
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


def layout_excluded(spec, layout: str, itemsizes=()) -> Optional[str]:
    """Why inputs laid out as ``layout`` ('strided', 'unaligned': verifier.inputs.layouts) are not given to the spec
    under its declared contracts (None: they are). ``itemsizes``: the element sizes of the tensors an unaligned
    case starts one element past a 16-byte boundary (an 8-byte element there is still 8-byte aligned)."""
    c, _ = effective(spec)
    if layout == "strided" and c.layout == "contiguous":
        return "not checked: declared layout=contiguous"
    if layout == "unaligned" and c.alignment != "element" and any(n % c.alignment for n in itemsizes or (1,)):
        return f"not checked: declared alignment={c.alignment}"
    return None


def excluded(spec, inputs: dict) -> Optional[str]:
    """Why these inputs are not checked under the spec's declared contracts (None: they are)."""
    c, _ = effective(spec)
    if c.nan_inputs == "propagate" and c.inf_inputs == "propagate":
        return None
    # A large array held as a few distinct rows (verifier.inputs.layouts.SparseRows) answers with those rows.
    held = [np.asarray(v.held() if hasattr(v, "held") else v) for v in inputs.values()]
    floats = [a for a in held if a.dtype.kind == "f" or a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2")]
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
