"""Dtype variants of a kernel: ``Dtypes(input, output, acc)``, the ``dtypes(...)`` shorthand and ``FLOAT_IO``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from verifier import dtypes as _dt
from verifier.errors import SpecError


@dataclass(frozen=True)
class Dtypes:
    """Input (x, residual; weights and biases too unless ``weight`` says otherwise), output and accumulation
    dtypes of one kernel variant. ``weight``: the dtype of the weight and bias vectors when it differs from the
    input's (f32 gamma/beta with bf16 x), else None."""

    input: str
    output: str
    acc: str
    weight: Optional[str] = None

    def __post_init__(self):
        for f in ("input", "output", "acc", "weight"):
            if f == "weight" and self.weight is None:
                continue
            try:
                object.__setattr__(self, f, _dt.canonical(getattr(self, f)))
            except Exception as e:  # UsageError -> SpecError naming the field
                raise SpecError(f"Dtypes.{f}: {getattr(e, 'message', e)}", fix=getattr(e, "fix", None)) from None
        if self.weight is not None and (self.weight == self.input or not _dt.is_float(self.weight)):
            if self.weight == self.input:
                object.__setattr__(self, "weight", None)  # the same as not saying it: one tag, one variant
            else:
                raise SpecError(f"Dtypes.weight: {self.weight} is not a floating-point dtype",
                                fix="weights and biases are float32, float16, bfloat16 or float64")

    @property
    def tag(self) -> str:
        """Short stable tag for ids: 'bf16' when all agree on the io dtype, else 'bf16-f32acc', 'bf16-f32w' etc."""
        s = _dt.SHORT
        t = s[self.input] if self.input == self.output else f"{s[self.input]}to{s[self.output]}"
        if self.acc not in (self.input, "float32") or (self.acc == self.input and self.input not in ("float32", "float64")):
            t += f"-{s[self.acc]}acc"
        if self.weight is not None:
            t += f"-{s[self.weight]}w"
        return t


def dtypes(input: str, output: Optional[str] = None, acc: str = "float32", weight: Optional[str] = None) -> Dtypes:
    """Shorthand: ``dtypes("bf16")`` is bf16 in, bf16 out, fp32 accumulation; ``dtypes("bf16", weight="f32")``
    reads float32 weights and biases with bf16 x."""
    return Dtypes(input, output or input, acc, weight)


# The float I/O variants of most reduction kernels: f32, f16, bf16 in and out, fp32 accumulation.
FLOAT_IO = (dtypes("f32"), dtypes("f16"), dtypes("bf16"))
