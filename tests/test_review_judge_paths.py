"""Review of the production-kernel fixes: judge paths that let a wrong output pass, or failed a right one. Each test
is a minimal kernel's output (a torch composition) judged directly."""
import ml_dtypes
import numpy as np
import pytest
import torch

from verifier.judge import Criteria, judge
from verifier.ops import OPS
from verifier.spec import dtypes

G = 128


def _near_pow2_groups():
    """x[2, 256] whose every group has amax = 448·2^-3·(1 - 2^-22): the raw scale amax / 448 is just below 2^-3, so
    the ue8m0 scale is 2^-3 and a kernel's raw scale within its bound may round to 2^-2 as well."""
    x = np.random.default_rng(0).standard_normal((2, 2 * G)).astype(np.float32)
    for r in range(2):
        for g in range(2):
            seg = x[r, g * G:(g + 1) * G]
            seg *= np.float32(448 * 2 ** -3 * (1 - 2 ** -22)) / np.abs(seg).max()
    return x


def _ue8m0_verdict(x, scale):
    s = torch.tensor(scale, dtype=torch.float32)
    y = (torch.tensor(x) / s.repeat_interleave(G, 1)).clamp(-448, 448).to(torch.float8_e4m3fn)
    c = Criteria(op="per_token_group_quant", dtypes=dtypes("f32", "float8_e4m3fn"),
                 params={**OPS["per_token_group_quant"].params, "ue8m0": True})
    return judge(c, {"x": x}, {"y": y.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn), "scale": s.numpy()})


@pytest.mark.parametrize("scale", [2.0 ** -3, 2.0 ** -2, 2.0 ** -4])
def test_ue8m0_scale_near_a_power_of_two_may_be_either_neighbour(scale):
    x = _near_pow2_groups()
    v = _ue8m0_verdict(x, np.full((2, 2), scale))
    assert v.ok, [t.message() for t in v.comparison.tensors if not t.ok] + [str(x) for x in v.violations]


def test_ue8m0_scale_far_off_fails_near_a_power_of_two():
    """E = s measured the budget at |s| - E = 0, a subnormal spacing: 1024 (2^13 times the scale), with y consistent
    with it (every y 0 or subnormal: the group dequantizes to nothing), passed."""
    x = _near_pow2_groups()
    assert not _ue8m0_verdict(x, np.full((2, 2), 1024.0)).ok
    assert not _ue8m0_verdict(x, np.full((2, 2), 2.0 ** -1)).ok  # two powers of two up


def test_ue8m0_scale_must_be_a_power_of_two():
    """A kernel writing the raw amax / qmax (ue8m0 rounding forgotten) where it is within its bound of a power of
    two: a UE8M0 consumer keeps only the exponent (2^-4 here: half the scale y was divided by)."""
    x = _near_pow2_groups()
    raw = np.abs(x).reshape(2, 2, G).max(-1).astype(np.float32) / np.float32(448)
    v = _ue8m0_verdict(x, raw)
    assert not v.ok and any(x.invariant.endswith("ue8m0_pow2") for x in v.violations), v.violations


def _check(op, fn, params, dt=("f32", "e4m3"), case=None):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import CallableKernel

    k = CallableKernel(name="k", op=op, fn=fn, dtypes=[dtypes(*dt)], params=params)
    return check_kernel(k, Options(level="quick", device="cpu", case=case))


def _all_zero(inputs, outputs, params, dt):
    for v in outputs.values():
        v.zero_()


def test_a_zero_scale_ub_is_refused_not_judged_as_zero_rows():
    """scale_ub=0 with floor=0 made every reference scale 0, which the judge takes as a zero row's (any finite y):
    a kernel writing zeros everywhere, for nonzero x, passed."""
    r = _check("per_token_quant", _all_zero, {"scale_ub": 0.0, "floor": 0.0}, case="mixed_magnitudes")
    assert r.verdict == "error" and "scale_ub" in r.error and "fix:" in r.error, (r.verdict, r.error)


@pytest.mark.parametrize("op,params,word", [
    ("per_token_quant", {"floor": -1.0}, "floor"),
    ("per_token_group_quant", {"scale_ub": None, "floor": "tiny"}, "floor"),
    ("topk_softmax", {"gate": "relu"}, "gate"),
])
def test_a_bad_param_says_so_not_fix_the_reference(op, params, word):
    """A bundled reference refusing a param (SpecError with its fix) was wrapped into 'its reference raised ...,
    fix: fix the reference function declared at verifier/ops/...', a fix the user cannot apply."""
    dt = ("f32", "f32") if op == "topk_softmax" else ("f32", "e4m3")
    params = {k: v for k, v in params.items() if k in OPS[op].params}
    r = _check(op, _all_zero, params, dt=dt)
    assert r.verdict == "error" and word in r.error and "fix the reference function" not in r.error, r.error


@pytest.mark.parametrize("params,word", [({"q_len": "n", "causal": True}, "q_len"),
                                         ({"causal_offset": "N - 4", "causal": True}, "causal_offset")])
def test_a_bad_query_param_is_a_spec_error_not_a_traceback(params, word):
    """q_len now takes 'N' besides ints; any other string raised ValueError out of check_kernel (exit 3)."""
    def sm(inputs, outputs, p, dt):
        outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

    r = _check("softmax", sm, params, dt=("f32",), case="normal_small")
    assert r.verdict == "error" and word in r.error and "fix:" in r.error, r.error


@pytest.mark.parametrize("op,dt,params,word", [
    ("cross_entropy", ("f32",), {"scale": "1/30"}, "scale"),  # ValueError out of check_kernel
    ("cross_entropy", ("f32",), {"ignore_index": "-100"}, "ignore_index"),  # ValueError out of check_kernel
    ("cross_entropy", ("f32",), {"smoothing_classes": "rest"}, "smoothing_classes"),  # UsageError: the run's end
    ("topk_softmax", ("f32",), {"scaling": "2.5"}, "scaling"),  # 'fix the reference function'
])
def test_a_bad_variant_param_is_the_kernels_error(op, dt, params, word):
    r = _check(op, _all_zero, params, dt=dt)
    assert r.verdict == "error" and word in r.error and "fix:" in r.error \
        and "fix the reference function" not in r.error, r.error


def test_an_unknown_values_dtype_is_refused_with_the_spec():
    """values_dtype names the values' dtype: unknown, it was a UsageError from the judge, mid-run (ending it)."""
    from verifier.errors import SpecError
    from verifier.spec import CallableKernel

    with pytest.raises(SpecError, match="values_dtype"):
        CallableKernel(name="k", op="topk_softmax", fn=_all_zero, dtypes=[dtypes("f32")],
                       params={"values_dtype": "fp8"})


def test_a_non_int_groups_is_outside_the_op_not_a_traceback():
    assert "groups='4'" in OPS["group_rmsnorm"].supports(64, {**OPS["group_rmsnorm"].params, "groups": "4"})


def _sqrtsoftplus_judge(x, idx, k=4):
    g = torch.sqrt(torch.nn.functional.softplus(torch.tensor(x)))
    ys = {"values": torch.gather(g, -1, idx).numpy(), "indices": idx.int().numpy()}
    p = {**OPS["topk_softmax"].params, "k": k, "gate": "sqrtsoftplus"}
    return judge(Criteria(op="topk_softmax", dtypes=dtypes("f32"), params=p), {"x": x}, ys)


def test_sqrtsoftplus_router_picking_masked_experts_fails():
    """DeepSeek-V4's gate sqrt(softplus(x)) of a -inf (masked) logit is sqrt(0): its derived error was inf (the
    interval a ± e of softplus crossed 0, outside sqrt's open domain), so a pick of a masked expert was 'within its
    error' of the k-th gate and passed."""
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    x[:, 8:] = -np.inf  # experts 8..15 masked
    right = torch.topk(torch.tensor(x), 4, -1).indices
    assert _sqrtsoftplus_judge(x, right).ok
    masked = torch.arange(8, 12).repeat(4, 1)
    v = _sqrtsoftplus_judge(x, masked)
    assert not v.ok and any(t.name == "indices" and not t.ok for t in v.comparison.tensors)


def test_sqrt_error_near_zero_is_bounded_by_the_root_of_its_argument_error():
    from verifier.judge import tolerance as _tol

    x = np.array([[-np.inf, -100.0, 0.0, 25.0]])
    p = {**OPS["topk_softmax"].params, "k": 2, "gate": "sqrtsoftplus"}
    (s, e), = _tol.derive("topk_softmax", lambda i, q: {"s": OPS["topk_softmax"].selection.scores(i, q)},
                          dtypes("f32"), "precise", {"x": x}, p, False).values()
    assert np.isfinite(e).all() and (e[0, :2] < 1e-3).all(), e


def test_a_value_whose_band_holds_zero_is_still_bounded():
    """Errors.budget measured E in the spacing at max(|y| - E, 0) = 0, a subnormal one: where E >= |y| the budget was
    some 2^100 ULPs and any value passed. The value of a pick of a masked expert (gate sqrt(softplus(-inf)) = 0,
    E ~ 2^-12 after the fix above) written as 5.0 passed so."""
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    x[:, 2:] = -np.inf  # two finite logits per row: the other two picks are masked experts of gate 0
    g = torch.sqrt(torch.nn.functional.softplus(torch.tensor(x)))
    idx = torch.topk(torch.tensor(x), 4, -1).indices
    vals = torch.gather(g, -1, idx)
    p = {**OPS["topk_softmax"].params, "k": 4, "gate": "sqrtsoftplus"}
    c = Criteria(op="topk_softmax", dtypes=dtypes("f32"), params=p)
    assert judge(c, {"x": x}, {"values": vals.numpy(), "indices": idx.int().numpy()}).ok
    vals[:, 2:] = 5.0
    v = judge(c, {"x": x}, {"values": vals.numpy(), "indices": idx.int().numpy()})
    assert not v.ok and any(t.name == "values" and not t.ok for t in v.comparison.tensors)


def test_through_zero_bounds_both_sides_of_the_band():
    """t = 1e-6, E = 1e-3: 5.0 (same side, far past the band) fails; -5e-4 (across 0, inside the band) passes;
    -2e-3 (across 0, outside it) fails; where the band holds no 0 nothing changes."""
    from verifier.judge.compare import through_zero

    t = np.array([1e-6, 1e-6, 1e-6, 1e-6, 3.0])
    a = np.array([5.0, -5e-4, -2e-3, 9e-4, 3.0], dtype=np.float32).astype(np.float64)
    allowed, band = through_zero(np.full(5, 1e40), a, t, t.astype(np.float32), np.full(5, 1e-3), 1.0, "float32")
    from verifier.numerics.ulp import ulp_distance

    dist = ulp_distance(a.astype(np.float32), t, "float32")
    ok = (dist <= allowed) | band
    assert ok.tolist() == [False, True, False, True, True] and allowed[4] == 1e40


def test_an_all_nan_argmax_pass_on_one_index_choice_is_a_caveat_not_a_pass():
    """The values step replayed a failing case with the all-NaN slice's first index (a failure only one choice shows
    is a caveat); a case that passed with the last index was never replayed, so a kernel right only for that
    choice passed on the CPU where compiled Triton may take the other."""
    from pathlib import Path

    from verifier.battery import gate
    from verifier.battery.values import evaluate
    from verifier.declare.registry import load_spec_file
    from verifier.launch import runner_for
    from verifier.results.options import Options

    (spec,) = load_spec_file(str(Path(__file__).parent / "data" / "all_nan_argmax" / "all_nan_argmax_spec.py"))
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    run, dt, opts = runner_for(spec), spec.dtypes[0], Options(device="cpu")
    _, ok, _ = evaluate(spec, run, dt, opts, {"x": x}, "finite")  # no all-NaN slice: judged, right
    assert ok.ok
    x[1] = np.inf
    with pytest.raises(gate.NotRun, match="all-NaN|only NaN"):
        evaluate(spec, run, dt, opts, {"x": x}, "inf_row")


def test_a_zero_scale_row_takes_int8s_minus_128_too():
    """floor 0 on a zero row: scale 0, and any finite y dequantizes to y·0 = 0. An unguarded int8 quantizer computes
    0·(1/0) = NaN and clamps it with fmaxf(NaN, -128) = -128, fminf(-128, 127): y = -128, a finite int8 that the rule
    (allowing -127..127, the symmetric saturation) refused: a false finding. An inf y (e5m2) stays one."""
    from verifier.judge.quantized import compare_quantized

    t, E = np.zeros((1, 4)), np.full((1, 4), np.inf)
    y = np.array([[-128, 127, 0, -1]], dtype=np.int8)
    assert compare_quantized("y", y, t, E, "int8").ok
    e5 = np.array([[np.inf, 1.0, 0.0, -57344.0]]).astype(ml_dtypes.float8_e5m2)
    assert not compare_quantized("y", e5, t, E, "float8_e5m2").ok


def test_ue8m0_pow2_invariant_leaves_nan_scales_to_the_values():
    from verifier.ops.group_quant import _off_pow2

    s = np.array([[np.nan, 0.25, 0.0, np.inf], [0.3, 0.5, 1.0, 2.0]])
    assert _off_pow2({}, {"scale": s}, {"ue8m0": True}).tolist() == [0.0, 1.0]
    assert _off_pow2({}, {"scale": s}, {"ue8m0": False}).tolist() == [0.0, 0.0]


def test_values_dtype_takes_the_short_dtype_names():
    """values_dtype='bf16' names the values' dtype as every dtype param does (the output is bfloat16), but the gate
    check compared the raw string with ('float32', 'bfloat16', 'float16') and refused it."""
    import ml_dtypes

    xs = {"x": np.random.default_rng(3).standard_normal((4, 16)).astype(ml_dtypes.bfloat16)}
    v, i = torch.topk(torch.softmax(torch.tensor(xs["x"].astype(np.float32)), -1), 4, -1)
    ys = {"values": v.to(torch.bfloat16).float().numpy().astype(ml_dtypes.bfloat16), "indices": i.int().numpy()}
    p = {**OPS["topk_softmax"].params, "k": 4, "values_dtype": "bf16"}
    assert judge(Criteria(op="topk_softmax", dtypes=dtypes("bf16", "f32"), params=p), xs, ys).ok
