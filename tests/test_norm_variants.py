"""The norm variants of issue #37 (verifier/ops/group_norm.py, row_amax.py, row_mean.py, var_mean.py, l2norm.py):
their budgets pass the correct formulas and reject the pitfalls on the ops' own cases, group_norm's layout is
torch's, and shapes outside an op (Op(supports=)) are neither run nor asked of a kernel."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from verifier.battery.refusal import check_refusal
from verifier.judge import check_output
from verifier.judge import tolerance as T
from verifier.ops import OPS
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

NEW = ("group_norm", "group_norm_noaffine", "row_amax", "row_mean", "var_mean", "l2norm", "rmsnorm_noweight",
       "layernorm_noweight", "layernorm_bias")


def _case(op, name, dtype, seed=0):
    """The inputs of op's own case ``name`` (the sampler's x; weights as the catalogue draws them)."""
    (c,) = [c for c in OPS[op].cases if c.name == name]
    x = c.sampler(np.random.default_rng(seed))((c.M, c.N), dtype)
    return x.astype(np.float32 if dtype == "float32" else np.float64)


def test_the_ops_are_bundled_with_torch_semantics_in_their_signatures():
    sig = {n: OPS[n].signature() for n in NEW}
    assert sig["group_norm"] == "x[M,N], w[channels] (weight), b[channels] (bias) -> y[M,N]"
    assert sig["var_mean"] == "x[M,N] -> var[M], mean[M]" and OPS["var_mean"].params == {"correction": 1}
    assert OPS["l2norm"].params == {"eps": 1e-12, "eps_mode": "clamp"} and OPS["group_norm"].params["groups"] == 4
    assert not OPS["row_amax"].derived and OPS["l2norm"].derived  # amax exact (hand), l2norm derived


def test_group_norm_reference_is_torch_on_the_channel_major_view():
    from references import reference

    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 48)).astype(np.float32)
    w, b = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    ref = reference("group_norm", {"x": x, "w": w, "b": b}, {"groups": 2, "channels": 8}, "float32").exact["y"]
    xt = torch.as_tensor(x, dtype=torch.float64).view(3, 8, 6)
    want = F.group_norm(xt, 2, torch.as_tensor(w, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64),
                        eps=1e-5).view(3, 48).numpy()
    np.testing.assert_allclose(ref, want, rtol=1e-12)
    # group 0 is the first 24 columns (channels 0-3), normalized on their own
    g0 = (x[:, :24].astype(np.float64) - x[:, :24].mean(1, keepdims=True)) / np.sqrt(x[:, :24].var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ref[:, :24], g0 * np.repeat(w[:4], 6) + np.repeat(b[:4], 6), rtol=1e-5, atol=1e-6)


def test_shapes_outside_the_op_are_not_run_and_not_asked_of_the_kernel():
    def crashes_on_odd_rows(i, o, p, d):  # a correct kernel that never checks N % channels
        x = i["x"]
        M, N = x.shape
        o["y"].copy_(F.group_norm(x.view(M, 8, N // 8), 4, i["w"], i["b"], 1e-5).view(M, N))

    k = CallableKernel(name="gn", op="group_norm", fn=crashes_on_odd_rows, dtypes=[dtypes("f32")])
    assert "not a multiple of channels=8" in k.check_supported(2, 1001, dtypes("f32"))
    assert k.check_supported(2, 1000, dtypes("f32")) is None
    report = check_refusal(k, dtypes("f32"), Options(level="quick", device="cpu"))
    assert not report.findings  # probes 1, 2, 3, 5, 7, 31, 33, 1025 ... are outside the op: no refusal demanded
    bad = CallableKernel(name="gn2", op="group_norm", fn=crashes_on_odd_rows, dtypes=[dtypes("f32")],
                         params={"groups": 3})
    assert "channels=8 is not a positive multiple of groups=3" in bad.check_supported(2, 64, dtypes("f32"))


def _gn_fused(x, w, b, G, C, eps, naive):
    """group_norm in float32 as torch / Liger compute it: per group mean and var (two-pass, or E[x²] - E[x]²),
    then y = x·a + c per channel."""
    M, N = x.shape
    xg = x.reshape(M, G, N // G).astype(np.float32)
    mean = xg.mean(-1, keepdims=True, dtype=np.float32)
    var = ((xg * xg).mean(-1, keepdims=True) - mean * mean) if naive else ((xg - mean) ** 2).mean(-1, keepdims=True)
    rstd = (1 / np.sqrt(np.maximum(var, 0) + np.float32(eps))).astype(np.float32)
    a = (rstd * np.repeat(w, N // C).reshape(1, G, N // G)).astype(np.float32)
    c = (np.repeat(b, N // C).reshape(1, G, N // G) - mean * a).astype(np.float32)
    return (xg * a + c).reshape(M, N).astype(np.float32)


# (case, dtype, whether the one-pass variance is over budget there). On gn_cancel_ulp_bumps in f32 the variance
# (ulp(1000)² ~ 4e-9) is far below eps and below what any fp32 mean can resolve (Δμ ~ γ(N)·1000): both pass.
@pytest.mark.parametrize("case,tag,naive_fails", [("gn_groups_const_and_mean_gg_std", "f32", True),
                                                  ("gn_cancel_ulp_bumps", "f16", True),
                                                  ("gn_cancel_ulp_bumps", "f32", False),
                                                  ("gn_group_80_cols", "f32", False)])
def test_group_norm_budget_passes_torchs_fused_form_and_rejects_the_one_pass_variance(case, tag, naive_fails):
    dtype = {"f16": "float16", "f32": "float32"}[tag]
    np_dt = np.float16 if tag == "f16" else np.float32
    x = _case("group_norm", case, dtype).astype(np_dt)
    rng = np.random.default_rng(2)
    w = (1 + 0.1 * rng.standard_normal(8)).astype(np_dt)
    b = (0.1 * rng.standard_normal(8)).astype(np_dt)
    xs = {"x": x, "w": w, "b": b}
    good = _gn_fused(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), 4, 8, 1e-5, naive=False)
    res = check_output("group_norm", xs, good.astype(np_dt), dtypes(tag))
    assert res.ok, res.message()
    naive = _gn_fused(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), 4, 8, 1e-5, naive=True)
    assert check_output("group_norm", xs, naive.astype(np_dt), dtypes(tag)).ok is not naive_fails


def test_group_norm_of_one_group_and_channel_has_layernorms_budget():
    from references import reference

    rng = np.random.default_rng(3)
    x = rng.uniform(999, 1001, (4, 256)).astype(np.float32)
    p = {"groups": 1, "channels": 1, "eps": 1e-5}
    ones, zeros = np.ones(256, np.float32), np.zeros(256, np.float32)
    gn = T.budget("group_norm_noaffine", dtypes("f32"), "precise", {"x": x},
                  reference("group_norm_noaffine", {"x": x}, p, "float32"), p)["y"]
    ln = T.budget("layernorm", dtypes("f32"), "precise", {"x": x, "w": ones, "b": zeros},
                  reference("layernorm", {"x": x, "w": ones, "b": zeros}, {"eps": 1e-5}, "float32"), {"eps": 1e-5})["y"]
    np.testing.assert_allclose(gn, ln, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_row_amax_is_exact_and_nan_wins(dtype):
    x = _case("row_amax", "amax_nan_inf_rows", dtype)
    tx = torch.as_tensor(x).to(getattr(torch, dtype))
    right = tx.abs().amax(-1)
    dt = dtypes({"float16": "f16", "bfloat16": "bf16", "float32": "f32"}[dtype])
    assert check_output("row_amax", {"x": tx}, right, dt).ok
    drops_nan = torch.nan_to_num(tx.abs(), nan=0.0).amax(-1)  # fmaxf: NaN dropped
    assert not check_output("row_amax", {"x": tx}, drops_nan, dt).ok
    neg = torch.as_tensor(_case("row_amax", "amax_negative_max", dtype)).to(tx.dtype)
    right = neg.abs().amax(-1)
    assert (right == 8).all() and check_output("row_amax", {"x": neg}, right, dt).ok
    assert not check_output("row_amax", {"x": neg}, neg.amax(-1), dt).ok  # a max without abs
    one_ulp_off = right.clone()
    one_ulp_off[1] = torch.nextafter(right[1], torch.tensor(np.inf, dtype=right.dtype))
    assert not check_output("row_amax", {"x": neg}, one_ulp_off, dt).ok  # budget 0: exact


def test_row_amax_reference_propagates_nan_and_abs_of_minus_inf():
    from references import reference

    x = np.array([[1.0, np.nan, -3.0], [-np.inf, 2.0, 0.0], [-0.0, 0.0, -0.0], [-5.0, 4.0, 1.0]], np.float32)
    y = reference("row_amax", {"x": x}, {}, "float32").exact["y"]
    assert np.isnan(y[0]) and y[1] == np.inf and y[2] == 0 and y[3] == 5.0


@pytest.mark.parametrize("tag", ["f16", "bf16"])
def test_var_mean_two_pass_passes_and_one_pass_fails_on_exact_cancelling_rows(tag):
    dtype = {"f16": "float16", "bf16": "bfloat16"}[tag]
    x = torch.as_tensor(_case("var_mean", "vm_cancel_ulp_bumps", dtype)).to(getattr(torch, dtype))
    xf = x.float()
    var, mean = torch.var_mean(xf, -1, correction=1)
    assert check_output("var_mean", {"x": x}, {"var": var.to(x.dtype), "mean": mean.to(x.dtype)}, dtypes(tag)).ok
    # one pass in fp32: sum(x²) - N·mean² (per-lane partial sums, as a block reduction forms them)
    N = x.shape[1]
    sq = (xf * xf).view(x.shape[0], 32, -1).sum(-1).sum(-1)
    naive = ((sq - N * mean * mean) / (N - 1)).clamp_min(0)
    c = check_output("var_mean", {"x": x}, {"var": naive.to(x.dtype), "mean": mean.to(x.dtype)}, dtypes(tag))
    assert not c["var"].ok and c["mean"].ok


def test_var_mean_of_one_element_with_bessel_is_nan_as_torch():
    from references import reference

    x = np.array([[3.0], [-1.0]], np.float32)
    ref = reference("var_mean", {"x": x}, {"correction": 1}, "float32").exact
    assert np.isnan(ref["var"]).all() and (ref["mean"] == x[:, 0]).all()
    assert check_output("var_mean", {"x": x}, {"var": np.full(2, np.nan, np.float32), "mean": x[:, 0]},
                        dtypes("f32")).ok
    assert not check_output("var_mean", {"x": x}, {"var": np.zeros(2, np.float32), "mean": x[:, 0]},
                            dtypes("f32")).ok
    zero = reference("var_mean", {"x": x}, {"correction": 0}, "float32").exact["var"]
    assert (zero == 0).all()


@pytest.mark.parametrize("tag", ["f32", "bf16"])
def test_l2norm_clamps_the_norm_and_eps_inside_the_sqrt_fails_on_tiny_rows(tag):
    dtype = {"f32": "float32", "bf16": "bfloat16"}[tag]
    x = torch.as_tensor(_case("l2norm", "l2_tiny_rows", dtype)).to(getattr(torch, dtype))
    xf = x.float()
    right = F.normalize(xf, dim=-1, eps=1e-12)
    assert check_output("l2norm", {"x": x}, right.to(x.dtype), dtypes(tag)).ok
    in_sqrt = xf / torch.sqrt((xf * xf).sum(-1, keepdim=True) + 1e-12)
    assert not check_output("l2norm", {"x": x}, in_sqrt.to(x.dtype), dtypes(tag)).ok
    randn = torch.randn(4, 256, generator=torch.Generator().manual_seed(0)).to(x.dtype)  # ordinary rows: the same
    rf = randn.float()
    assert check_output("l2norm", {"x": randn}, (rf / torch.sqrt((rf * rf).sum(-1, keepdim=True) + 1e-12)).to(x.dtype),
                        dtypes(tag)).ok


def test_l2norm_zero_rows_give_zero_not_nan():
    x = np.zeros((2, 64), np.float32)
    assert check_output("l2norm", {"x": x}, np.zeros((2, 64), np.float32), dtypes("f32")).ok
    assert not check_output("l2norm", {"x": x}, np.full((2, 64), np.nan, np.float32), dtypes("f32")).ok


def test_row_mean_budget():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 1000)).astype(np.float32)
    assert check_output("row_mean", {"x": x}, x.mean(-1, dtype=np.float32), dtypes("f32")).ok
    assert not check_output("row_mean", {"x": x}, x[:, :999].mean(-1, dtype=np.float32), dtypes("f32")).ok


def test_the_documented_tensor_table_lists_every_new_op():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "specs.md").read_text()
    for name in NEW:
        assert f"\n| {name} | `x[M,N]`" in doc, name


def test_weightless_variants_have_the_weighted_ops_budgets_with_w_1_and_leave_those_ops_alone():
    from references import reference

    rng = np.random.default_rng(5)
    x = rng.uniform(999, 1001, (4, 512)).astype(np.float32)
    b = (0.1 * rng.standard_normal(512)).astype(np.float32)
    ones = np.ones(512, np.float32)
    f32 = dtypes("f32")
    pairs = [("layernorm_bias", {"x": x, "b": b}, "layernorm", {"x": x, "w": ones, "b": b}),
             ("layernorm_noweight", {"x": x}, "layernorm", {"x": x, "w": ones, "b": 0 * b}),
             ("rmsnorm_noweight", {"x": x}, "rmsnorm", {"x": x, "w": ones})]
    for mine, xs, theirs, xs2 in pairs:
        p = dict(OPS[mine].params)
        got = T.budget(mine, f32, "precise", xs, reference(mine, xs, p, "float32"), p)["y"]
        want = T.budget(theirs, f32, "precise", xs2, reference(theirs, xs2, p, "float32"), p)["y"]
        np.testing.assert_allclose(got, want, rtol=1e-9, err_msg=mine)
    assert OPS["rmsnorm"].signature() == "x[M,N], w[N] (weight) -> y[M,N]" and OPS["rmsnorm"].params == {
        "eps": 1e-6, "offset": 0.0}
    assert OPS["layernorm"].signature() == "x[M,N], w[N] (weight), b[N] (bias) -> y[M,N]"
    xt = torch.as_tensor(x[:, :64])
    right = F.layer_norm(xt, (64,), None, torch.as_tensor(b[:64]), 1e-5)
    assert check_output("layernorm_bias", {"x": x[:, :64], "b": b[:64]}, right, f32).ok
    no_bias = F.layer_norm(xt, (64,), None, None, 1e-5)  # a kernel ignoring b
    assert not check_output("layernorm_bias", {"x": x[:, :64], "b": b[:64]}, no_bias, f32).ok
