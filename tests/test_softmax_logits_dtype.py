"""softmax's ``logits_dtype="input"``: the scores scaled and masked in the input dtype before a float32 softmax, as
PyTorch's unfused attention does (HF eager_attention_forward: bf16 scores·scaling + mask in bf16, then
softmax(dtype=float32)). Each stage's rounding to the input dtype is then part of the logits' error; undeclared,
that rounding is a value finding (188 ULP on huge logits in bf16), and declared it must not hide a real defect."""
import pytest
import torch
import torch.nn.functional as F

from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

P = {"scale": 0.1, "mask": "MxN", "masked_rows": "nan"}
CI = Options(level="ci", device="cpu", dtype="bf16")


def _eager(too_large=1.0):
    def fn(inputs, outputs, params, dt):
        w = inputs["x"] * params["scale"] + inputs["mask"]  # in the input dtype
        return {"y": (F.softmax(w, dim=-1, dtype=torch.float32) * too_large).to(inputs["x"].dtype)}
    return fn


def _check(name, fn, **params):
    return check_kernel(CallableKernel(name=name, op="softmax", fn=fn, dtypes=[dtypes("bf16")],
                                       params={**P, **params}), CI)


def test_logits_rounded_in_bf16_fail_undeclared_and_pass_declared():
    bare = _check("eager", _eager())
    assert bare.verdict == "fail" and any(f.check == "value" for f in bare.findings)
    declared = _check("eager-declared", _eager(), logits_dtype="input")
    assert declared.verdict == "pass", [f.message for f in declared.findings][:3]


def test_the_declaration_does_not_hide_probabilities_five_percent_too_large():
    r = _check("eager-5pct", _eager(1.05), logits_dtype="input")
    assert r.verdict == "fail" and {"value", "invariant"} & {f.check for f in r.findings}


def test_an_unknown_logits_dtype_is_the_kernels_error_with_the_fix():
    r = _check("eager-typo", _eager(), logits_dtype="bf16")
    assert r.error is not None and "logits_dtype" in r.error and "'input'" in r.error
