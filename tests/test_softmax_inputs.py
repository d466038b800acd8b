"""The softmax family's extra inputs: optional inputs on the public Op (variants), the references' semantics
(scale, causal, mask, softcap, ALiBi, sinks), the masked_rows contract (undeclared: a warning), the budget."""
import numpy as np
import pytest
import torch

from references import reference
from verifier.errors import SpecError
from verifier.judge import Criteria, judge
from verifier.ops import OPS, variant_for
from verifier.spec import CallableKernel, Op, Tensor, dtypes

P = {"mask": "MxN", "causal": True, "scale": 0.5}


def _inputs(M=6, N=8, seed=0, dead_row=2):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, N)).astype(np.float32)
    mask = np.where(rng.random((M, N)) < 0.3, -np.inf, 0).astype(np.float32)
    mask[:, 0] = 0
    if dead_row is not None:
        mask[dead_row] = -np.inf
    return {"x": x, "mask": mask}


def _torch(xs, p, zeros=False):
    z = torch.tensor(xs["x"], dtype=torch.float64) * p.get("scale", 1.0) + torch.tensor(xs["mask"], dtype=torch.float64)
    M, N = z.shape
    z = z.masked_fill(torch.ones(M, N, dtype=torch.bool).triu(1), float("-inf"))
    y = torch.softmax(z, -1)
    return (torch.nan_to_num(y, nan=0.0) if zeros else y).float().numpy()


def test_default_op_is_unchanged_and_optional_inputs_make_a_variant():
    sm = OPS["softmax"]
    assert sm.inputs == ("x",) and sm.signature() == "x[M,N] -> y[M,N]"
    name = variant_for("softmax", {"mask": "N"})
    assert name == "softmax[mask:N]" and OPS[name].inputs == ("x", "mask") and OPS[name].base == "softmax"
    assert OPS[name].shape_of("mask", 4, 8) == (8,)
    assert variant_for("softmax", {"scale": 2.0}) == "softmax"  # params alone keep the op
    with pytest.raises(SpecError, match="broadcasts from"):
        OPS["softmax"].variant({"mask": "M"})
    with pytest.raises(SpecError, match="masked_rows"):
        OPS["softmax"].variant({"masked_rows": "zero"})


def test_reference_follows_torch_composition_and_the_contract():
    xs = _inputs()
    name = variant_for("softmax", P)
    r = reference(name, xs, P, "float32")
    want = _torch(xs, P)
    assert np.isnan(r.rounded["y"][2]).all() and np.isnan(r.rounded["y"][0]).sum() == 0
    np.testing.assert_allclose(np.nan_to_num(r.rounded["y"]), np.nan_to_num(want), rtol=1e-6, atol=1e-7)
    rz = reference(name, xs, {**P, "masked_rows": "zeros"}, "float32")
    assert (rz.rounded["y"][2] == 0).all()
    # causal: row 0 keeps column 0 only (the triangle's first row); the mask keeps column 0 too
    assert rz.rounded["y"][0, 0] == 1.0 and (rz.rounded["y"][0, 1:] == 0).all()


@pytest.mark.parametrize("declared,zeros,ok,warns", [
    (None, False, True, True), (None, True, True, True), ("zeros", True, True, False), ("zeros", False, False, False),
    ("nan", True, False, False), ("nan", False, True, False)])
def test_masked_rows_contract(declared, zeros, ok, warns):
    xs = _inputs()
    name = variant_for("softmax", P)
    p = {**OPS[name].params, **P, "masked_rows": declared}
    v = judge(Criteria(op=name, dtypes=dtypes("f32"), params=p), xs, {"y": _torch(xs, P, zeros)})
    assert v.ok == ok
    assert bool(v.undeclared) == warns
    if warns:
        assert "masked_rows" in v.undeclared[0] and ("'zeros'" if zeros else "'nan'") in v.undeclared[0]


def test_no_dead_row_no_warning():
    xs = _inputs(dead_row=None)
    name = variant_for("softmax", P)
    v = judge(Criteria(op=name, dtypes=dtypes("f32"), params={**OPS[name].params, **P}), xs, {"y": _torch(xs, P)})
    assert v.ok and not v.undeclared


def test_scale_applied_to_the_max_only_is_caught():
    """exp(x·s - max(x)·s) vs exp(x - max)·... : a kernel scaling only the max is over budget."""
    xs = _inputs(dead_row=None)
    p = {"scale": 0.125, "mask": "MxN", "causal": True, "masked_rows": "nan"}
    name = variant_for("softmax", p)
    z = torch.tensor(xs["x"], dtype=torch.float64) + torch.tensor(xs["mask"], dtype=torch.float64)
    z = z.masked_fill(torch.ones(6, 8, dtype=torch.bool).triu(1), float("-inf"))
    bad = torch.softmax(z, -1).float().numpy()  # scale forgotten in the exponent
    v = judge(Criteria(op=name, dtypes=dtypes("f32"), params={**OPS[name].params, **p}), xs, {"y": bad})
    assert not v.ok


def test_softcap_sinks_alibi_reference():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 16)) * 100).astype(np.float32)
    sl, sk = np.full(4, 0.25, np.float32), rng.standard_normal(4).astype(np.float32)
    p = {"softcap": 30.0, "alibi_slopes": True, "sinks": True, "causal": True, "causal_offset": 2}
    name = variant_for("softmax", p)
    r = reference(name, {"x": x, "alibi_slopes": sl, "sinks": sk}, p, "float32")
    z = 30.0 * np.tanh(x.astype(np.float64) / 30.0)
    i, j = np.arange(4)[:, None] + 2, np.arange(16)[None, :]
    z = np.where(j > i, -np.inf, z - 0.25 * np.abs(i - j))
    zc = np.concatenate([z, sk.astype(np.float64)[:, None]], 1)
    want = np.exp(zc - zc.max(1, keepdims=True))
    want = (want / want.sum(1, keepdims=True))[:, :16]
    np.testing.assert_allclose(r.exact["y"], want, rtol=1e-12, atol=1e-300)
    assert r.exact["y"].sum(1).max() < 1  # the sink holds some mass


def test_user_op_with_an_optional_input():
    def ref(inputs, params):
        x = inputs["x"]
        return {"y": x + inputs["b"] if "b" in inputs else x}

    op = Op("add_opt_bias_t", inputs={"x": "MxN", "b": Tensor("N", role="bias", optional=True)}, outputs={"y": "MxN"},
            params={"b": None}, reference=ref)
    assert op.inputs == ("x",) and "b" in op.optional
    k = CallableKernel(name="add-opt-bias", op=op, fn=lambda i, o, p, d: {"y": i["x"] + i["b"]},
                       dtypes=[dtypes("f32")], params={"b": True})
    assert OPS[k.op].inputs == ("x", "b") and k.op == "add_opt_bias_t[b]"
    from verifier.judge import check_output

    x, b = np.arange(15, dtype=np.float32).reshape(3, 5) / 7, np.linspace(-1, 1, 5).astype(np.float32)
    assert check_output(k.op, {"x": x, "b": b}, x + b, dtypes("f32"), params={"b": True}).ok  # derived budget
    assert not check_output(k.op, {"x": x, "b": b}, x, dtypes("f32"), params={"b": True}).ok  # the bias ignored
    with pytest.raises(SpecError, match="param of its name"):
        Op("bad_opt_t", inputs={"x": "MxN", "b": Tensor("N", optional=True)}, outputs={"y": "MxN"}, reference=ref)


def _zeros_rows_kernel(inputs, outputs, params, dt):
    z = inputs["x"].float() * params["scale"] + inputs["mask"].float()
    n = z.shape[1]
    z = z.masked_fill(torch.ones(z.shape[0], n, dtype=torch.bool).triu(1), float("-inf"))
    return {"y": torch.nan_to_num(torch.softmax(z, -1), nan=0.0).to(inputs["x"].dtype)}


@pytest.mark.parametrize("declared,verdict", [(None, "warning"), ("zeros", "pass"), ("nan", "nan-inf")])
def test_battery_judges_the_contract_on_the_full_rows_case(declared, verdict):
    """One input through the battery (run_case): the case's mask maker draws fully masked rows; the kernel writes
    zeros there. Undeclared: a warning naming masked_rows; declared zeros: clean; declared nan: a nan-inf finding."""
    from verifier.battery.values import run_case
    from verifier.inputs.cases import cases_for
    from verifier.results.options import Options, derived_seed

    extra = {} if declared is None else {"masked_rows": declared}
    k = CallableKernel(name=f"zeros-rows-{declared}", op="softmax", fn=_zeros_rows_kernel, dtypes=[dtypes("f32")],
                       params={"scale": 0.125, "mask": "MxN", "causal": True, **extra})
    dt = k.dtypes[0]
    case = next(c for c in cases_for(k, dt, "ci") if c.name == "sm_mask_full_rows")
    xs = case.make(np.random.default_rng(derived_seed(0, k.name, dt.tag, case.name)), dt, k.op, k.op_params())
    assert np.isneginf(xs["mask"][0]).all()  # the case's full rows
    report = run_case(k, dt, case.name, xs, Options(level="ci", device="cpu"))
    got = [(f.check, f.severity) for f in report.findings]
    if verdict == "pass":
        assert got == []
    elif verdict == "warning":
        assert got == [("value", "warning")] and "masked_rows" in report.findings[0].message
    else:
        assert ("nan-inf", "error") in got


def test_q_len_rows_and_bottom_right_alignment():
    """Rows are (heads, queries) flattened: row r is query r mod q_len; causal_offset = N - q_len is FlashAttention's
    bottom-right alignment (the last query sees every key)."""
    from verifier.ops.softmax_inputs import causal_masked

    M, N, q = 8, 6, 4
    m = causal_masked(M, N, {"causal": True, "q_len": q, "causal_offset": N - q})
    keep = (~m).sum(1)
    assert keep.tolist() == [3, 4, 5, 6, 3, 4, 5, 6]
    top_left = causal_masked(M, N, {"causal": True})  # PyTorch is_causal: row i keeps 0..i
    assert (~top_left).sum(1).tolist() == [1, 2, 3, 4, 5, 6, 6, 6]


def test_a_variant_is_found_by_its_name():
    from verifier.inputs.catalogue import catalogue

    names = {c.name for c in catalogue("softmax[mask:N]")}
    assert {"sm_mask_full_rows", "sm_mask_all_but_last", "sm_causal_triangle"} <= names
    assert "sm_mask_full_rows" not in {c.name for c in catalogue("softmax")}  # needs a mask
    assert "softmax[sinks]" in OPS and "softmax[bogus]" not in OPS


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_log_softmax_and_online_stats_take_the_extra_inputs(dt):
    """The torch composition in fp32, rounded once, passes log_softmax's and online_softmax_stats's budgets with
    scale, softcap, mask and causal; the stats' l off by a scale forgotten fails."""
    from verifier.judge import check_output

    rng = np.random.default_rng(3)
    M, N = 6, 40
    d = dtypes(dt)
    xt = torch.randn(M, N, generator=torch.Generator().manual_seed(3)).to(getattr(torch, d.input))
    mask = torch.where(torch.tensor(rng.random((M, N)) < 0.3), float("-inf"), 0.0).to(xt.dtype)
    mask[:, 0] = 0
    p = {"scale": 0.25, "softcap": 5.0, "mask": "MxN", "causal": True}
    z = 5.0 * torch.tanh(xt.float() * 0.25 / 5.0) + mask.float()
    z = z.masked_fill(torch.ones(M, N, dtype=torch.bool).triu(1), float("-inf"))
    xs = {"x": xt.numpy() if dt == "f32" else xt, "mask": mask}
    ls = variant_for("log_softmax", p)
    assert check_output(ls, xs, torch.log_softmax(z, -1).to(xt.dtype), d, params=p).ok
    st = variant_for("online_softmax_stats", p)
    m = z.amax(-1)
    good = {"m": m.to(xt.dtype), "l": torch.exp(z - m[:, None]).sum(-1).to(xt.dtype)}
    assert check_output(st, xs, good, d, params=p).ok
    z1 = 5.0 * torch.tanh(xt.float() / 5.0) + mask.float()  # scale forgotten
    z1 = z1.masked_fill(torch.ones(M, N, dtype=torch.bool).triu(1), float("-inf"))
    m1 = z1.amax(-1)
    bad = {"m": m1.to(xt.dtype), "l": torch.exp(z1 - m1[:, None]).sum(-1).to(xt.dtype)}
    assert not check_output(st, xs, bad, d, params=p).ok
