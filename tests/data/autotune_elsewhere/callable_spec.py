"""Callables over Triton kernels they do not declare (a library's torch function over its own kernels): on the CPU
they run in the interpreter, autotuners pinned config by config (tests/test_callable_triton.py)."""
import importlib.util
from pathlib import Path

from verifier.spec import FLOAT_IO, CallableKernel, dtypes

HERE = Path(__file__).resolve().parent


def _library(path):
    spec = importlib.util.spec_from_file_location(path.stem + "_as_library", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row_sum(inputs, outputs, params, dt):
    from rowsum_lib import row_sum  # imported when called, as a library's function is

    row_sum(inputs["x"], outputs["y"])


def _rms_norm(inputs, outputs, params, dt):  # the bundled Triton RMSNorm's launcher, called as a library function
    _library(HERE.parents[2] / "kernels" / "triton" / "rmsnorm.py").launch(inputs, outputs, params, dt)


KERNELS = [CallableKernel(name="callable-rowsum-through-a-library", op="reduce_sum", fn=_row_sum,
                          dtypes=[dtypes("f32")], supports=lambda M, N, dt: None if N <= 4096 else "N > 4096"),
           CallableKernel(name="callable-triton-rmsnorm", op="rmsnorm", fn=_rms_norm, dtypes=FLOAT_IO,
                          math_mode="triton_approx",
                          supports=lambda M, N, dt: None if N <= 16384 else "N > 16384 (one block per row)")]


def _truncating(inputs, outputs, params, dt):  # a fused add + RMSNorm truncating fp32 to bf16 (by bit shift)
    _library(HERE.parents[2] / "kernels" / "defects" / "triton" / "rounding_defects.py").launch_truncating(
        inputs, outputs, params, dt)


KERNELS.append(CallableKernel(name="callable-triton-truncating", op="fused_add_rmsnorm", fn=_truncating,
                              dtypes=[dtypes("bf16")], math_mode="triton_approx",
                              supports=lambda M, N, dt: None if N <= 16384 else "N > 16384"))
