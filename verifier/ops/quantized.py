"""``Quantized``: an output stored quantized (fp8 e4m3fn / e5m2, int8), with its scale, judged in the quantized domain
(verifier.judge.quantized)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from verifier.errors import SpecError


@dataclass(frozen=True)
class Quantized:
    """An output stored quantized (``Op(quantized={"y": Quantized(scale="scale")})``): the reference gives the exact
    pre-quantization value t = value / scale and the kernel writes saturate(round(t)) in the output's quantized dtype
    (fp8 e4m3fn, fp8 e5m2 or int8), compared in the quantized domain (verifier.judge.quantized).

    scale: the tensor holding the scale: an input (a static scale) or an output (a dynamic per-row scale, compared in
    its own dtype with its own budget). rescale: for a dynamic scale, ``fn(inputs, params, scale, ctx) -> (t, E)``,
    the pre-quantization value under the kernel's own scale ``scale`` ([M], float64) and the error bound of the
    kernel's t (``ctx``: verifier.numerics.errmodel.Ctx), so that a scale within its budget does not move y's
    verdict. rounding_param: the param naming the rounding mode ('nearest_even', or 'half_away' / 'toward_zero' for
    kernels that declare it). form_param: the param saying a dynamic scale output holds the inverse ('inverse':
    qmax / max(amax, floor), infinite for an all-zero row without a floor; the rescale then takes it so)."""

    scale: str
    rescale: Optional[Callable] = field(default=None, repr=False, compare=False)
    rounding_param: str = "rounding"
    form_param: str = "scale_form"


def check_quantized(where: str, op) -> None:
    """An op's ``quantized`` entries name its outputs, each with a scale tensor it has (a dynamic one: a rescale)."""
    for t, q in op.quantized.items():
        if t not in op.outputs or not isinstance(q, Quantized):
            raise SpecError(f"{where}: quantized names {t!r}: {q!r}",
                            fix="quantized={output: Quantized(scale='scale')}, one entry per quantized output")
        if q.scale not in op.inputs + op.outputs or q.scale in op.quantized:
            raise SpecError(f"{where}: quantized output {t!r} has scale {q.scale!r}, not an input or output",
                            fix="name the scale tensor: an input (a static scale) or an output (a dynamic one)")
        if q.scale in op.outputs and q.rescale is None:
            raise SpecError(f"{where}: quantized output {t!r} has a dynamic scale {q.scale!r} but no rescale",
                            fix="give Quantized(rescale=fn(inputs, params, scale, ctx) -> (t, E))")
