"""Outputs written over an input (``outputs_alias``, issue #23): one buffer holds x on entry and y on exit, the
guard bands stay, and an element left holding x where x is not an acceptable result is an unwritten finding."""
import numpy as np
import pytest
import torch

from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.spec import CallableKernel, SpecError, dtypes

QUICK = Options(level="quick", device="cpu", case="normal_small")


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def in_place(inputs, outputs, params, dt):
    x = inputs["x"]
    assert x is outputs["y"], "the harness gives one buffer for x and y"
    x.copy_(_rms(x, inputs["w"], params["eps"]))


def skips_last_row(inputs, outputs, params, dt):
    x = inputs["x"]
    x[:-1].copy_(_rms(x[:-1], inputs["w"], params["eps"]))  # the last row keeps x


def writes_past_the_end(inputs, outputs, params, dt):
    in_place(inputs, outputs, params, dt)
    y = outputs["y"]
    torch.as_strided(y, (y.numel() + 1,), (1,))[-1] = 0.0  # one element past the buffer


def _spec(fn, **kw):
    return CallableKernel(name=fn.__name__, op="rmsnorm", fn=fn, dtypes=[dtypes("f32"), dtypes("bf16")],
                          outputs_alias={"y": "x"}, **kw)


def test_a_kernel_writing_y_over_x_passes():
    report = check_kernel(_spec(in_place), QUICK)
    assert report.verdict == "pass" and not report.findings, report.findings


def test_an_element_left_as_x_is_unwritten_and_a_value_failure():
    report = check_kernel(_spec(skips_last_row), QUICK)
    checks = {f.check for f in report.findings}
    assert {"unwritten", "value"} <= checks, report.findings
    msg = next(f.message for f in report.findings if f.check == "unwritten")
    assert "written over input 'x'" in msg and "first at index (3, 0)" in msg


def test_guard_bands_surround_the_shared_buffer():
    report = check_kernel(_spec(writes_past_the_end), QUICK)
    assert any(f.check == "out-of-range-write" for f in report.findings), report.findings


@pytest.mark.parametrize("alias, words", [
    ({"y": "w"}, "different shapes"),
    ({"x": "y"}, "is not an output"),
    ({"y": "nope"}, "is not an input"),
])
def test_bad_aliases_name_the_problem(alias, words):
    with pytest.raises(SpecError, match=words):
        CallableKernel(name="k", op="rmsnorm", fn=in_place, dtypes=[dtypes("f32")], outputs_alias=alias)
    with pytest.raises(SpecError, match="dtypes bf16tof32 give 'y' in float32 but 'x' in bfloat16"):
        CallableKernel(name="k", op="rmsnorm", fn=in_place, dtypes=[dtypes("bf16", "f32")],
                       outputs_alias={"y": "x"})
