"""Dtype variants of a kernel: ``Dtypes(input, output, acc)``, the ``dtypes(...)`` shorthand and ``FLOAT_IO``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from verifier import dtypes as _dt
from verifier.errors import SpecError


@dataclass(frozen=True)
class Dtypes:
    """Input (x, weights, residual), output and accumulation dtypes of one kernel variant."""

    input: str
    output: str
    acc: str

    def __post_init__(self):
        for f in ("input", "output", "acc"):
            try:
                object.__setattr__(self, f, _dt.canonical(getattr(self, f)))
            except Exception as e:  # UsageError -> SpecError naming the field
                raise SpecError(f"Dtypes.{f}: {getattr(e, 'message', e)}", fix=getattr(e, "fix", None)) from None

    @property
    def tag(self) -> str:
        """Short stable tag for ids: 'bf16' when all agree on the io dtype, else 'bf16-f32acc' etc."""
        s = _dt.SHORT
        t = s[self.input] if self.input == self.output else f"{s[self.input]}to{s[self.output]}"
        if self.acc not in (self.input, "float32") or (self.acc == self.input and self.input not in ("float32", "float64")):
            t += f"-{s[self.acc]}acc"
        return t


def dtypes(input: str, output: Optional[str] = None, acc: str = "float32") -> Dtypes:
    """Shorthand: ``dtypes("bf16")`` is bf16 in, bf16 out, fp32 accumulation."""
    return Dtypes(input, output or input, acc)


# The float I/O variants of most reduction kernels: f32, f16, bf16 in and out, fp32 accumulation.
FLOAT_IO = (dtypes("f32"), dtypes("f16"), dtypes("bf16"))
