"""The derived budget (verifier.ops.derived) against the hand-derived budgets of the bundled ops: each bundled op is
declared again as a user would (tests/derived_twins.py), and on its catalogue both budgets are within a small factor
of each other and give the same verdicts on a correct float32 evaluation, a bfloat16-arithmetic one and outputs 5%
too large (benchmarks/derived_budget.py prints the full table; docs/tolerances.md quotes it)."""
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from op_registry import registry  # noqa: F401 (the fixture)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import derived_budget as D  # noqa: E402
from derived_twins import REFERENCES, twin  # noqa: E402

from verifier.errors import SpecError  # noqa: E402
from verifier.numerics.errmodel import INTRINSICS  # noqa: E402
from verifier.ops import OPS, Op, register  # noqa: E402
from verifier.ops.derived import NoErrorRule, Rounding, propagate  # noqa: E402
from verifier.spec import dtypes, may_round  # noqa: E402

F32 = Rounding(2.0 ** -24, 2.0 ** -149, INTRINSICS[("float32", "precise")])




@pytest.mark.parametrize("tag", ["f32", "bf16"])
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_derived_budget_tracks_the_hand_budget(registry, name, tag):
    register(twin(name))
    dt = dtypes(tag)
    medians, differ, n = [], [], 0
    for case, xs in D.cases(name, dt, max_n=4096):
        ref, hand, mine, rs = D.ratios(name, dt, xs, online=name == "online_softmax_stats")
        medians += [float(np.median(r)) for r in rs.values() if r.size]
        differ += [(case.name, how, v) for how, v in D.verdicts(name, dt, xs, ref, hand, mine).items() if v[0] != v[1]]
        n += 1
    assert n >= 10 and medians
    assert 0.5 <= float(np.median(medians)) <= 2.0, f"{name} {tag}: derived/hand median ratio {np.median(medians)}"
    assert not differ, f"{name} {tag}: verdicts differ (case, output, (hand ok, derived ok)): {differ}"


def test_cancellation_grows_the_bound_where_the_result_shrinks():
    rng = np.random.default_rng(0)
    for offset, want in ((0.0, 1e3), (1000.0, 3e4)):  # about N·|mean|·u absolute on |d| ~ 1
        x = offset + rng.standard_normal((2, 64))
        (v, e), = propagate(lambda i, p: {"d": i["x"] - i["x"].mean(-1, keepdim=True)}, {"x": x}, {}, F32).values()
        rel = np.median(e / np.abs(v)) / F32.u
        assert (rel < want) if offset == 0 else (rel > want), (offset, rel)


def test_special_values_are_exact_and_sums_bounded():
    x = np.array([[0.5, -np.inf, 1.0, 2.0]])
    out = propagate(lambda i, p: {"y": torch.softmax(i["x"], -1), "s": i["x"].exp().sum(-1)}, {"x": x}, {}, F32)
    y, ey = out["y"]
    assert np.isfinite(ey).all() and ey[0, 1] < 1e-40 and (ey[0, [0, 2, 3]] > 0).all()
    s, es = out["s"]
    assert 0 < es[0] < 1e-5 * s[0]


def test_may_round_adds_the_io_rounding():
    io = {"input": (2.0 ** -8, 0.0)}
    r = Rounding(F32.u, F32.eta, F32.intr, io=io)
    x = np.ones((1, 4))
    (_, plain), = propagate(lambda i, p: {"y": i["x"] * 3}, {"x": x}, {}, r).values()
    (_, stored), = propagate(lambda i, p: {"y": may_round(i["x"] * 3, "input")}, {"x": x}, {}, r).values()
    assert np.allclose(stored - plain, 3 * 2.0 ** -8)
    with pytest.raises(SpecError, match="may_round"):
        may_round(torch.ones(1), "accumulator")


@pytest.mark.parametrize("body, what", [
    ("torch.erf(x)", "torch.erf"),
    ("torch.as_tensor(x.numpy())", "Tensor.numpy"),
    ("x.exp_()", "exp_"),
])
def test_functions_without_a_rule_are_refused_not_guessed(body, what):
    fn = eval(f"lambda i, p: {{'y': (lambda x: {body})(i['x'])}}", {"torch": torch})
    with pytest.raises(NoErrorRule, match=what.replace("(", r"\(")):
        propagate(fn, {"x": np.ones((2, 3))}, {}, F32)


def test_budget_of_an_op_without_a_rule_is_that_kernels_spec_error(registry):
    from references import reference
    from verifier.judge.tolerance import budget

    op = register(Op("erf_rows", inputs={"x": "MxN"}, outputs={"y": "MxN"}, reference=lambda i, p: {"y": torch.erf(i["x"])}))
    xs = {"x": np.ones((2, 3), dtype=np.float32)}
    ref = reference(op.name, xs, {}, "float32")
    with pytest.raises(SpecError) as e:
        budget(op.name, dtypes("f32"), "precise", xs, ref, {})
    assert "torch.erf" in e.value.message and "no error rule" in e.value.message and "recipe=" in e.value.fix


@pytest.mark.parametrize("name", ["layernorm", "rmsnorm", "fused_add_rmsnorm"])
def test_no_derived_budget_is_infinite_on_a_finite_reference(registry, name):
    """An infinite budget accepts any value: a silent pass. A cancelled variance (mean >> std rows, cancel_ulp_bumps)
    once sent rsqrt's interval below 0; the floors (a sum of squares >= 0, + eps > 0) keep it bounded."""
    from references import reference
    from verifier.judge import tolerance as T

    register(twin(name))
    for tag in ("f32", "bf16"):
        dt = dtypes(tag)
        for case, xs in D.cases(name, dt, max_n=4096):
            ref = reference(name, xs, {}, dt.output)
            b = T.budget(f"derived_{name}", dt, "precise", xs, ref, dict(OPS[name].params))
            bad = {t: int((~np.isfinite(v) & np.isfinite(ref.exact[t])).sum()) for t, v in b.items()}
            assert not any(bad.values()), (tag, case.name, bad)

