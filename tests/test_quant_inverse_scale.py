"""per_token_quant declares CTranslate2's quantize_kernel form (tests/data/quant_inverse/inverse_scale_spec.py):
``scale_form="inverse"`` (the scale output holds qmax / amax, any finite value > 0 for an all-zero row without a
floor, y = saturate(round(x·s))) and ``rounding="toward_zero"`` (a plain cast's truncation). Declared, the correct
quantizer passes; undeclared, each is the finding it was (the scale far off, y one step toward zero: "truncated?");
a twin rounding to nearest where truncation is declared and one writing 128 / amax fail."""
from pathlib import Path

import numpy as np
import pytest

from verifier.judge.quantized import compare_quantized
from verifier.numerics.quantized import fmt

SPEC = Path(__file__).parent / "data" / "quant_inverse" / "inverse_scale_spec.py"


def _load():
    import importlib.util

    spec = importlib.util.spec_from_file_location("inverse_scale_spec", SPEC)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _check(params=None):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    mod = _load()
    return {k.name: check_kernel(k, Options(level="quick", device="cpu"))
            for k in mod.kernels(mod.DECLARED if params is None else params)}


def _messages(r):
    return [f.message for f in r.findings]


def test_toward_zero_truncates_on_every_format_and_saturates():
    i8, e4 = fmt("int8"), fmt("float8_e4m3fn")
    t = np.array([0.0, 0.5, 1.0, 1.99, -1.99, -0.5, 126.99, 127.0, 300.0, -300.0, np.nan])
    assert np.array_equal(i8.quantize(t, "toward_zero"), [0, 0, 1, 1, -1, 0, 126, 127, 127, -127, np.nan],
                          equal_nan=True)
    assert list(e4.quantize(np.array([1.124, 1.125, -1.2, 500.0, 1e-3]), "toward_zero")) == [1.0, 1.125, -1.125,
                                                                                               448.0, 0.0]
    # judged as declared: truncation passes exactly outside the band, a rounded value is named
    t = np.random.default_rng(0).uniform(-100, 100, 400)
    assert compare_quantized("y", np.trunc(t).astype(np.int8), t, np.full(t.shape, 1e-6), "int8", "toward_zero").ok
    got = compare_quantized("y", np.round(t).astype(np.int8), t, np.full(t.shape, 1e-6), "int8", "toward_zero")
    assert not got.ok and "rounded to nearest where truncation toward zero was declared" in got.worst[0].why


def test_a_declared_inverse_truncating_quantizer_passes_and_its_twins_fail():
    got = _check()
    good = got["ptq-inverse-trunc"]
    assert good.verdict == "pass" and not good.findings, _messages(good)[:3]
    rounded = got["ptq-inverse-rounded"]  # nearest where truncation is declared: y wrong, its scale right
    assert rounded.verdict == "fail" and all(m.startswith("y:") for m in _messages(rounded)), _messages(rounded)[:3]
    assert any("rounded to nearest where truncation" in m for m in _messages(rounded))
    wrong = got["ptq-inverse-128"]  # 128 / amax: the inverse itself is wrong, and y with it
    assert wrong.verdict == "fail" and any(m.startswith("scale:") for m in _messages(wrong)), _messages(wrong)[:3]
    assert any(m.startswith("y:") for m in _messages(wrong))


@pytest.mark.parametrize("params, wrong", [({"floor": 0.0}, {"scale", "y"}),  # neither declared
                                           ({"scale_form": "inverse", "floor": 0.0}, {"y"}),  # truncation undeclared
                                           ({"rounding": "toward_zero", "floor": 0.0}, {"scale"})])
def test_undeclared_the_correct_quantizer_keeps_its_findings(params, wrong):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    k = next(k for k in _load().kernels(params) if k.name == "ptq-inverse-trunc")
    r = check_kernel(k, Options(level="quick", device="cpu"))
    assert r.verdict == "fail", _messages(r)[:3]
    assert {m.split(":")[0] for m in _messages(r)} >= wrong, _messages(r)[:3]
    if wrong == {"y"}:  # truncation, undeclared: named as such
        assert any("toward zero (truncated?)" in m for m in _messages(r)), _messages(r)[:3]


def test_an_unknown_scale_form_is_the_kernels_error_naming_the_forms():
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    k = next(k for k in _load().kernels({"scale_form": "reciprocal"}) if k.name == "ptq-inverse-trunc")
    r = check_kernel(k, Options(level="quick", device="cpu", case="zero_rows"))
    text = " ".join([str(r.error)] + _messages(r))
    assert r.verdict == "error" and "scale_form" in text and "inverse" in text, (r.verdict, text[:500])
