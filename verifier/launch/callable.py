"""Runner for CallableKernel: any Python function (torch ops, third-party library ops).

What ``fn`` returns is the kernel's answer: an output of the wrong shape or dtype, an unknown name, anything but a
dict is that kernel's error (verdict ``error``, exit 1; the other kernels are checked), never the run's end.

On the CPU a callable may launch Triton kernels (a library's torch function over its own Triton kernels, as Liger's,
FLA's and Unsloth's are): they run in the Triton interpreter, which the check commits to on the CPU
(verifier.isolation), under the same interpreter patches as a TritonKernel's launcher, and the callable is marked
as interpreted from then on (its cases take the interpreter's caveats)."""
from __future__ import annotations

import contextlib

from verifier.declare.kernels import mark_launched_triton
from verifier.declare.usercode import UserCodeError
from verifier.errors import Unsupported
from verifier.launch.triton_configs import wrap_run
from verifier.ops.other_names import named_too


def run_callable(spec, inputs, outputs, params, dt, device) -> None:
    if spec.device not in ("any", device):
        raise Unsupported(f"kernel {spec.name} runs on {spec.device} only, not {device}")
    M, N = inputs["x"].shape[0], inputs["x"].shape[-1]
    reason = spec.check_supported(M, N, dt)
    if reason:
        raise Unsupported(f"{spec.name} refuses M={M}, N={N}, {dt.tag}: {reason}")
    with _triton_interpreter(spec, device):
        result = spec.fn(named_too(spec, inputs), named_too(spec, outputs), params, dt)
    wrap_run()  # a library imported by fn brought triton: its autotuners are pinned from the next call on
    if result is None:
        return
    if not isinstance(result, dict):
        raise _returned(spec, f"a {type(result).__name__}",
                        "return None (after writing into outputs) or a dict output-name -> tensor")
    for name, value in result.items():
        if name not in outputs:
            raise _returned(spec, f"an unknown output {name!r}", f"op {spec.op} writes {sorted(outputs)}")
        dst = outputs[name]
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            raise _returned(spec, f"output {name!r} as a {type(value).__name__}, not a tensor",
                            f"return a torch tensor of shape {tuple(dst.shape)} and dtype {dst.dtype}")
        if tuple(value.shape) == () and tuple(dst.shape) == (1,):
            value = value.reshape(1)  # a batch's one value as torch reduces it (F.cross_entropy's mean): 0-d
        if tuple(value.shape) != tuple(dst.shape):
            raise _returned(spec, f"output {name!r} of shape {tuple(value.shape)} for M={M}, N={N}; the op's "
                            f"{name} is {tuple(dst.shape)}", "return tensors of the op's output shapes "
                            "(docs/specs.md lists each op's tensors)")
        if value.dtype != dst.dtype:
            raise _returned(spec, f"output {name!r} of dtype {value.dtype}; the {dt.tag} variant declares "
                            f"{dst.dtype}", "return the declared output dtype (the comparison is in ULPs of that "
                            "dtype), or declare the dtype variant the kernel computes")
        if value.data_ptr() != dst.data_ptr():
            dst.copy_(value)


@contextlib.contextmanager
def _triton_interpreter(spec, device):
    """Around a CPU call, when triton is imported in interpreter mode: the interpreter's patches (as a TritonKernel's
    launch has them) and a count of the Triton kernels the call ran. Otherwise nothing (no import of triton)."""
    from verifier.launch.triton import interpreter_active, interpreter_if_installed

    if device == "cpu":
        interpreter_if_installed()  # a no-op where the check committed already (verifier.isolation, the plugin)
    wrap_run()  # the pin in force (verifier.launch.triton_configs) reaches autotuners where triton is imported
    if device != "cpu" or not interpreter_active():
        yield
        return
    import numpy as np

    from verifier.launch.interpreter import watch
    from verifier.launch.triton_capture import interpreted

    try:
        with np.errstate(all="ignore"), watch(), interpreted() as launched:  # numpy computes; inf/NaN expected
            yield
    finally:  # a kernel that raised in the interpreter ran too: its gaps (gate.after_run) apply to that run
        if launched.seen:
            mark_launched_triton(spec, launched.functions)


def _returned(spec, what: str, fix: str) -> UserCodeError:
    origin = getattr(spec, "origin", None) or "<spec not loaded from a file>"
    return UserCodeError(f"kernel {spec.name}: fn() of spec file {origin} returned {what}", fix=fix)


def bench_call(spec, inputs, outputs, params, dt):
    """verifier bench's call: the function as the user calls it (a returned tensor is not copied into the outputs),
    after one checked run (a CPU-only callable raises Unsupported)."""
    run_callable(spec, inputs, outputs, params, dt, "cuda")
    inputs, outputs = named_too(spec, inputs), named_too(spec, outputs)
    return lambda: spec.fn(inputs, outputs, params, dt)
