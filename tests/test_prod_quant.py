"""Production quantizers' legitimate variants, reproduced from scratch (tests/data/prod_quant/): each must pass, and
a defect beside it must still fail."""
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "prod_quant"


def _check(spec_file, cases=None):
    """Each kernel of the spec file at the quick level, or on its one case in ``cases`` (CPU suite time)."""
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    return {k.name: check_kernel(k, Options(level="quick", device="cpu", case=(cases or {}).get(k.name)))
            for k in load_spec_file(str(DATA / spec_file))}


def _msgs(r):
    return [f.message for f in r.findings][:3]


def test_norm_times_weight_in_the_input_dtype_is_covered_by_round_normed():
    """vLLM's fused RMSNorm + quant kernels multiply the bf16-stored x·rsqrt by the weight in bf16 (two roundings of
    the normalized value); declared round_normed, that is inside the budget, static and dynamic scale alike, while
    a scale taken before the weight still fails."""
    got = _check("norm_product_spec.py", {"rms-dyn-quant-bf16-product": "mixed_magnitudes",  # the cases that failed
                                          "rms-quant-bf16-product": "beyond_saturation",  # before round_normed held
                                          "rms-dyn-quant-amax-before-weight": "normal_small"})  # the weight product
    for name in ("rms-dyn-quant-bf16-product", "rms-quant-bf16-product"):
        assert got[name].verdict == "pass", (name, _msgs(got[name]))
    bad = got["rms-dyn-quant-amax-before-weight"]
    assert bad.verdict == "fail" and any("scale" in m for m in _msgs(bad)), _msgs(bad)


def test_an_amax_upper_bound_is_declared_with_scale_ub():
    """vLLM's dynamic per-token fp8 quantizers cap the amax at scale_ub: declared, correct; undeclared, the capped
    rows' scales are wrong."""
    got = _check("scale_ub_spec.py")
    assert got["ptq-scale-ub"].verdict == "pass", _msgs(got["ptq-scale-ub"])
    bad = got["ptq-scale-ub-undeclared"]
    assert bad.verdict == "fail" and any("scale" in m for m in _msgs(bad)), _msgs(bad)


def test_a_zero_scale_takes_any_finite_value_but_not_nan():
    """floor 0 (a kernel without one) on a zero row: scale 0, so any finite y dequantizes to exactly 0: a guarded
    reciprocal (y = 0) and 1 / 0 = inf clamped to 448 (0·inf = NaN, fmaxf / fminf give 448) both pass; a NaN y (which
    poisons the GEMM: NaN·0 = NaN) fails."""
    names = ("ptq-zero-scale-guarded", "ptq-zero-scale-inf", "ptq-zero-scale-nan")
    got = _check("zero_scale_spec.py", {n: "zero_rows" for n in names})
    for name in names[:2]:
        assert got[name].verdict == "pass", (name, _msgs(got[name]))
    bad = got["ptq-zero-scale-nan"]
    assert bad.verdict == "fail" and any("NaN" in m for m in _msgs(bad)), _msgs(bad)
