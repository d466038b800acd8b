"""softmax's mask_dtype: the dtype a kernel reads its additive mask in, whatever x's. ggml's soft_max_f32 takes f32
logits with an f16 (or f32) mask, llama.cpp's KQ mask; before the param the mask was always in the input dtype, so
such a kernel could not be declared (the param was unknown, and its launch read an f32 mask as halves). Our own
torch compositions, checked at the quick level on the CPU."""
import pytest
import torch

from verifier.battery import check_kernel
from verifier.errors import SpecError
from verifier.ops import get_op, variant_for
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

P = {"scale": 0.125, "mask": "MxN", "masked_rows": "nan"}
OPTS = Options(level="quick", device="cpu")


def _f16_mask(inputs, outputs, params, dt):
    """f32 logits, an f16 additive mask (refused in any other dtype: the kernel's pointer type)."""
    m = inputs["mask"]
    if m.dtype != torch.float16:
        raise TypeError(f"the mask is {m.dtype}, the kernel reads float16")
    return {"y": torch.softmax(inputs["x"] * params["scale"] + m.float(), -1)}


def _mask_ignored(inputs, outputs, params, dt):
    return {"y": torch.softmax(inputs["x"] * params["scale"], -1)}


def _check(fn, **p):
    spec = CallableKernel(name="f16-mask", op="softmax", fn=fn, dtypes=[dtypes("f32")], device="cpu", params={**P, **p})
    return check_kernel(spec, OPTS)


def test_the_mask_is_in_the_declared_dtype():
    op = get_op(variant_for("softmax", P))
    assert op.input_dtype("mask", dtypes("bf16"), {**P, "mask_dtype": "float16"}) == "float16"
    assert op.input_dtype("mask", dtypes("bf16"), P) == "bfloat16"  # undeclared: the input dtype, as before
    assert op.input_dtype("x", dtypes("bf16"), {**P, "mask_dtype": "float16"}) == "bfloat16"


def test_a_kernel_reading_an_f16_mask_passes_when_declared():
    report = _check(_f16_mask, mask_dtype="float16")
    assert report.verdict == "pass", [f.message for f in report.findings]
    assert _check(_f16_mask).verdict == "error"  # undeclared, its mask is f32: the kernel refuses it


def test_the_mask_is_still_judged():
    report = _check(_mask_ignored, mask_dtype="float16")
    assert report.verdict == "fail" and any(f.check in ("value", "nan-inf") for f in report.findings)


def test_a_mask_dtype_that_is_no_dtype_is_a_spec_error():
    with pytest.raises(SpecError, match="mask_dtype"):
        variant_for("softmax", {**P, "mask_dtype": "half-ish"})
