"""Runner for CallableKernel: any Python function (torch ops, third-party library ops)."""
from __future__ import annotations

from verifier.errors import Unsupported, UsageError


def run_callable(spec, inputs, outputs, params, dt, device) -> None:
    if spec.device not in ("any", device):
        raise Unsupported(f"kernel {spec.name} runs on {spec.device} only, not {device}")
    M, N = inputs["x"].shape[0], inputs["x"].shape[-1]
    reason = spec.check_supported(M, N, dt)
    if reason:
        raise Unsupported(f"{spec.name} refuses M={M}, N={N}, {dt.tag}: {reason}")
    result = spec.fn(inputs, outputs, params, dt)
    if result is None:
        return
    if not isinstance(result, dict):
        raise UsageError(
            f"kernel {spec.name}: fn returned {type(result).__name__}",
            fix="return None (after writing into outputs) or a dict output-name -> tensor",
        )
    for name, value in result.items():
        if name not in outputs:
            raise UsageError(f"kernel {spec.name}: fn returned unknown output {name!r}", fix=f"outputs are {sorted(outputs)}")
        dst = outputs[name]
        if tuple(value.shape) != tuple(dst.shape):
            raise UsageError(
                f"kernel {spec.name}: output {name!r} has shape {tuple(value.shape)}, expected {tuple(dst.shape)}",
                fix="return tensors of the op's output shapes",
            )
        if value.dtype != dst.dtype:
            raise UsageError(
                f"kernel {spec.name}: output {name!r} has dtype {value.dtype}, declared {dst.dtype}",
                fix="return the declared output dtype (the comparison is in ULPs of that dtype)",
            )
        if value.data_ptr() != dst.data_ptr():
            dst.copy_(value)
