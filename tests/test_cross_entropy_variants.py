"""Cross entropy variants (label_smoothing, z_loss, softcap on cross_entropy; op cross_entropy_reduced with its
loss[1]): the reference against PyTorch, the budget passing PyTorch and rejecting the pitfalls, the '1' output in
the op model, the cases, and the Triton kernels and defects in the interpreter."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import references
from op_registry import registry  # noqa: F401 (fixture: user ops leave OPS as it was)
from verifier.errors import SpecError, UsageError
from verifier.inputs.catalogue import catalogue, maker
from verifier.judge import check_output
from verifier.ops import OPS, get_op
from verifier.spec import Op, dtypes

F32 = dtypes("f32")
BF16 = dtypes("bf16", "f32")
IGN = -100
REPO = Path(__file__).resolve().parents[1]


def _torch(x, labels, eps=0.0, z=0.0, cap=0.0, reduction="none", dtype=torch.float64):
    """PyTorch's loss (with the variants PyTorch lacks written as their papers do), in ``dtype``."""
    xt, lt = torch.from_numpy(np.asarray(x, np.float64)).to(dtype), torch.from_numpy(labels.astype(np.int64))
    if cap:
        xt = cap * torch.tanh(xt / cap)
    loss = F.cross_entropy(xt, lt, reduction="none", ignore_index=IGN, label_smoothing=eps)
    if z:
        loss = loss + z * torch.logsumexp(xt, -1) ** 2 * (lt != IGN)
    if reduction != "none":
        loss = loss.sum().reshape(1)
        if reduction == "mean":
            loss = loss / (lt != IGN).sum()
    return loss.numpy()


def _inputs(M=6, N=300, seed=0, ignored=(1, 4)):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, N)).astype(np.float32).astype(np.float64)
    labels = rng.integers(N, size=M)
    labels[list(ignored)] = IGN
    return x, labels


VARIANTS = [{"label_smoothing": 0.1}, {"z_loss": 1e-4}, {"softcap": 30.0},
            {"label_smoothing": 0.2, "z_loss": 1e-3, "softcap": 5.0}]


def _p(v):
    return v.get("label_smoothing", 0.0), v.get("z_loss", 0.0), v.get("softcap", 0.0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_reference_matches_pytorch_in_float64(variant, reduction):
    x, labels = _inputs()
    op, params = ("cross_entropy", dict(variant)) if reduction == "none" else \
        ("cross_entropy_reduced", {**variant, "reduction": reduction})
    ref = references.reference(op, {"x": x, "labels": labels}, params, "float64")
    want = _torch(x, labels, *_p(variant), reduction=reduction)
    np.testing.assert_allclose(ref.exact["loss"], want, rtol=1e-12, atol=1e-12)


def test_defaults_keep_the_plain_loss_and_its_budget():
    x, labels = _inputs()
    plain = references.reference("cross_entropy", {"x": x, "labels": labels}, {}, "float32")
    zeros = references.reference("cross_entropy", {"x": x, "labels": labels},
                                 {"label_smoothing": 0.0, "z_loss": 0.0, "softcap": 0.0}, "float32")
    assert (plain.rounded["loss"] == zeros.rounded["loss"]).all()
    from verifier.judge import tolerance

    b0 = tolerance.budget("cross_entropy", F32, "precise", {"x": x, "labels": labels}, plain)
    b1 = tolerance.budget("cross_entropy", F32, "precise", {"x": x, "labels": labels}, zeros,
                          {"label_smoothing": 0.0, "z_loss": 0.0, "softcap": 0.0})
    assert (b0["loss"] == b1["loss"]).all()
    smooth = tolerance.budget("cross_entropy", F32, "precise", {"x": x, "labels": labels}, zeros,
                              {"label_smoothing": 0.1})
    assert (smooth["loss"][labels != IGN] > b0["loss"][labels != IGN]).all()  # the smoothing sum adds its error


def test_special_values_follow_pytorch():
    x, labels = _inputs(M=4, N=64, ignored=(3,))
    x[0, 5] = -np.inf  # the smoothing mean of -log p is +inf (PyTorch), the plain loss finite
    labels[0] = 6
    x[1, 7] = 1e30  # softcap: a huge logit caps to c
    x[3, 0] = np.nan  # an ignored row holding NaN: 0
    got = references.reference("cross_entropy", {"x": x, "labels": labels}, {"label_smoothing": 0.1}, "float32")
    want = _torch(x, labels, 0.1)
    assert got.exact["loss"][0] == np.inf == want[0] and got.exact["loss"][3] == 0.0
    plain = references.reference("cross_entropy", {"x": x, "labels": labels}, {}, "float32").exact["loss"]
    assert np.isfinite(plain[0])
    capped = references.reference("cross_entropy", {"x": x, "labels": labels}, {"softcap": 30.0}, "float64")
    np.testing.assert_allclose(capped.exact["loss"][:3], _torch(x, labels, cap=30.0)[:3], rtol=1e-12)
    x2, l2 = _inputs(M=3, ignored=(0, 1, 2))  # every row ignored
    mean = references.reference("cross_entropy_reduced", {"x": x2, "labels": l2}, {}, "float32").exact["loss"]
    assert np.isnan(mean[0]) and np.isnan(_torch(x2, l2, reduction="mean")[0])
    zero = references.reference("cross_entropy_reduced", {"x": x2, "labels": l2}, {"empty_mean": "zero"},
                                "float32").exact["loss"]
    total = references.reference("cross_entropy_reduced", {"x": x2, "labels": l2}, {"reduction": "sum"},
                                 "float32").exact["loss"]
    assert zero[0] == 0.0 and total[0] == 0.0


def test_bad_reduction_params_are_usage_errors_with_a_fix():
    x, labels = _inputs()
    for bad in ({"reduction": "none"}, {"empty_mean": "inf"}):
        with pytest.raises(UsageError) as e:
            references.reference("cross_entropy_reduced", {"x": x, "labels": labels}, bad, "float32")
        assert next(iter(bad)) in e.value.message and e.value.fix


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_budget_passes_pytorch_in_float32(variant, reduction):
    x, labels = _inputs(M=8, N=1000)
    op, params = ("cross_entropy", dict(variant)) if reduction == "none" else \
        ("cross_entropy_reduced", {**variant, "reduction": reduction})
    got = _torch(x, labels, *_p(variant), reduction=reduction, dtype=torch.float32)
    c = check_output(op, {"x": x.astype(np.float32), "labels": labels}, got, F32, params=params)
    assert c.ok, c.message()


def test_budget_rejects_the_pitfalls():
    x, labels = _inputs(M=8, N=1000)
    xs = {"x": x.astype(np.float32), "labels": labels}
    xt, lt = torch.from_numpy(xs["x"]), torch.from_numpy(labels)
    lsm = F.log_softmax(xt, -1)
    nll = -lsm.gather(1, lt.clamp(min=0)[:, None])[:, 0]
    n_minus_1 = ((0.9 * nll + 0.1 * (-lsm.sum(-1) / 999)) * (lt != IGN)).numpy()
    assert not check_output("cross_entropy", xs, n_minus_1, F32, params={"label_smoothing": 0.1}).ok
    no_target_share = ((0.9 * nll + 0.1 * (-(lsm.sum(-1) - lsm.gather(1, lt.clamp(min=0)[:, None])[:, 0]) / 1000))
                       * (lt != IGN)).numpy()
    assert not check_output("cross_entropy", xs, no_target_share, F32, params={"label_smoothing": 0.1}).ok
    over_m = _torch(x, labels, reduction="sum", dtype=torch.float32) / 8
    assert not check_output("cross_entropy_reduced", xs, over_m, F32, params={"reduction": "mean"}).ok
    capped = 30.0 * torch.tanh(xt / 30.0)
    uncapped_lse = (F.cross_entropy(capped, lt, reduction="none", ignore_index=IGN)
                    + 1e-2 * torch.logsumexp(xt, -1) ** 2 * (lt != IGN)).numpy()  # z_loss of the raw logits
    assert not check_output("cross_entropy", xs, uncapped_lse, F32, params={"z_loss": 1e-2, "softcap": 30.0}).ok
    x2, l2 = _inputs(M=3, ignored=(0, 1, 2))
    assert not check_output("cross_entropy_reduced", {"x": x2.astype(np.float32), "labels": l2},
                            np.zeros(1, np.float32), F32).ok  # 0 where PyTorch's mean is NaN, undeclared
    xn = xs["x"].copy()
    xn[1, 3] = np.nan  # an ignored row holding NaN: z·lse²·mask is NaN·0 = NaN there, a where() gives 0
    xt = torch.from_numpy(xn)
    z_masked = (F.cross_entropy(xt, lt, reduction="none", ignore_index=IGN)
                + 1e-4 * torch.logsumexp(xt, -1) ** 2 * (lt != IGN)).numpy()
    assert labels[1] == IGN and np.isnan(z_masked[1])
    assert not check_output("cross_entropy", {"x": xn, "labels": labels}, z_masked, F32, params={"z_loss": 1e-4}).ok
    z_where = (F.cross_entropy(xt, lt, reduction="none", ignore_index=IGN)
               + torch.where(lt != IGN, 1e-4 * torch.logsumexp(xt, -1) ** 2, 0.0)).numpy()
    assert check_output("cross_entropy", {"x": xn, "labels": labels}, z_where, F32, params={"z_loss": 1e-4}).ok


def test_a_batch_output_in_the_op_model():
    op = get_op("cross_entropy_reduced")
    assert op.dims_of("loss") == (1,) and op.reduces_rows and not get_op("cross_entropy").reduces_rows
    assert op.shape_of("loss", 7, 5) == (1,)
    ref = lambda inputs, params: {"y": inputs["x"].sum().reshape(1)}  # noqa: E731
    assert Op("batch_total", inputs={"x": "MxN"}, outputs={"y": "1"}, reference=ref).reduces_rows
    for bad in ("N", "2", "NxM"):
        with pytest.raises(SpecError) as e:
            Op("bad_total", inputs={"x": "MxN"}, outputs={"y": bad}, reference=ref)
        assert "'1'" in e.value.fix
    from verifier.inputs.cases import cases_for
    from verifier.spec import CallableKernel

    def names(op):
        k = CallableKernel(name=f"k-{op}", op=op, fn=lambda *a: None, dtypes=[F32])
        return {c.name for c in cases_for(k, F32, "thorough")}

    assert "large_index_2pow31" not in names("cross_entropy_reduced")
    assert {"ce_all_ignored", "ce_half_ignored"} <= names("cross_entropy_reduced")
    assert "large_index_2pow31" in names("cross_entropy")


def test_the_large_family_left_out_is_said_not_silent():
    from verifier.battery import check_kernel
    from verifier.errors import UsageError
    from verifier.inputs.cases import selected_cases
    from verifier.results.notes import kind
    from verifier.results.options import Options
    from verifier.spec import CallableKernel

    def loss(x, labels, out):
        out[...] = F.cross_entropy(torch.as_tensor(x).double(), torch.as_tensor(labels).long()).float()

    k = CallableKernel(name="ce-mean", op="cross_entropy_reduced", fn=loss, dtypes=[F32])
    report = check_kernel(k, Options(level="ci", device="cpu"))
    said = [n for n in report.notes if "large_index_2pow31" in n]
    assert said and kind(said[0]) == "case-not-run" and "loss" in said[0] and "every row" in said[0]
    with pytest.raises(UsageError) as e:
        selected_cases(k, F32, Options(level="thorough", case="row_stride_2pow31"))
    assert "every row" in str(e.value)


def test_variant_cases_draw_what_they_promise():
    cases = {c.name: c for c in get_op("cross_entropy").cases}
    rng = np.random.default_rng(0)
    params = get_op("cross_entropy").params
    got = maker(4, 64, cases["ce_all_ignored"].sampler, "all_ignored")(rng, F32, "cross_entropy", params)
    assert (got["labels"] == IGN).all()
    got = maker(8, 64, cases["ce_half_ignored"].sampler, "half_ignored")(rng, F32, "cross_entropy", params)
    assert (got["labels"] == IGN).sum() == 4 and got["labels"][-1] != IGN
    got = maker(4, 64, cases["ce_one_neg_inf"].sampler, "finite")(rng, F32, "cross_entropy", params)
    assert (np.isneginf(got["x"]).sum(axis=1) == 1).all()
    assert np.isfinite(got["x"][np.arange(4), got["labels"]]).all()
    got = maker(4, 64, cases["ce_huge_logits"].sampler)(rng, F32, "cross_entropy", params)
    assert np.abs(got["x"]).max() > 1e3


def _triton_module(path, name):
    from verifier.launch import triton as runner

    if runner._active == "compiled":
        pytest.skip("interpreter tests need their own process: run pytest -m interpreter")
    runner.activate("interpreter")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(launch, op, params, x, labels):
    full = {**get_op(op).params, **params}
    out = torch.full(get_op(op).shape_of("loss", *x.shape), float("nan"), dtype=torch.float32)
    launch({"x": torch.from_numpy(x.astype(np.float32)), "labels": torch.from_numpy(labels)}, {"loss": out}, full, F32)
    return out.numpy(), full


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_triton_kernels_pass_and_their_defects_fail_in_the_interpreter():
    good = _triton_module(REPO / "kernels" / "triton" / "cross_entropy_variants.py", "ce_variants_good")
    bad = _triton_module(REPO / "kernels" / "defects" / "triton" / "cross_entropy_variants_defects.py",
                         "ce_variants_bad")
    x, labels = _inputs(M=8, N=300, ignored=(0, 2, 4, 6))
    x[1, :] = 95.0 + x[1, :]  # past exp overflow: the max subtraction is needed

    def judged(launch, op, params, xx=x, ll=labels):
        got, full = _run(launch, op, params, xx, ll)
        return check_output(op, {"x": xx.astype(np.float32), "labels": ll}, got, F32, "triton_approx", full,
                            {"online": True})

    for op, params in (("cross_entropy", {"label_smoothing": 0.1}),
                       ("cross_entropy", {"z_loss": 1e-4, "softcap": 30.0}),
                       ("cross_entropy_reduced", {"reduction": "mean", "label_smoothing": 0.1}),
                       ("cross_entropy_reduced", {"reduction": "sum", "z_loss": 1e-4, "softcap": 30.0})):
        c = judged(good.launch, op, params)
        assert c.ok, (op, params, c.message())
    none = np.full(4, IGN)
    got, _ = _run(good.launch, "cross_entropy_reduced", {"reduction": "mean"}, x[:4], none)
    assert np.isnan(got[0])  # a mean over no row: NaN, as PyTorch
    assert not judged(bad.launch_mean_over_m, "cross_entropy_reduced",
                      {"reduction": "mean", "label_smoothing": 0.1}).ok
    assert not judged(bad.launch_smoothing_n_minus_1, "cross_entropy", {"label_smoothing": 0.1}).ok
    huge = (np.random.default_rng(1).standard_normal((4, 256)) * 1e4).astype(np.float32).astype(np.float64)
    lab = np.arange(4)
    assert judged(good.launch, "cross_entropy", {"z_loss": 1e-4, "softcap": 30.0}, huge, lab).ok
    assert not judged(bad.launch_softcap_after_max, "cross_entropy", {"z_loss": 1e-4, "softcap": 30.0}, huge, lab).ok


def test_the_bundled_specs_declare_the_variants():
    from verifier.declare.registry import load_spec_file

    for path, kind in ((REPO / "kernels" / "triton" / "cross_entropy_variants_spec.py", "triton"),
                       (REPO / "kernels" / "cuda" / "cross_entropy_variants_spec.py", "cuda")):
        specs = load_spec_file(path)
        assert {s.op for s in specs} == {"cross_entropy", "cross_entropy_reduced"}
        assert all(s.kind == kind and s.online for s in specs)
        reductions = {s.op_params().get("reduction") for s in specs if s.op == "cross_entropy_reduced"}
        assert reductions == {"mean", "sum"}
    assert "cross_entropy_reduced" in OPS


def _soft(x, t, eps=0.0, z=0.0, cap=0.0, dtype=torch.float64):
    xt = torch.from_numpy(np.asarray(x, np.float64)).to(dtype)
    tt = torch.from_numpy(np.asarray(t, np.float64)).to(dtype)
    xt = cap * torch.tanh(xt / cap) if cap else xt
    return (F.cross_entropy(xt, tt, reduction="none", label_smoothing=eps) + z * torch.logsumexp(xt, -1) ** 2).numpy()


def _soft_inputs(policy=None, masked=False, M=5, N=400):
    from verifier.ops.cross_entropy import make_target

    rng = np.random.default_rng(3)
    x = rng.standard_normal((M, N)).astype(np.float32).astype(np.float64)
    if masked:
        x[:, : N // 4] = -np.inf
    return x, make_target(rng, x, {}, policy).astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("variant", [{}] + VARIANTS)
def test_soft_labels_reference_and_budget_match_pytorch(variant):
    x, t = _soft_inputs()
    ref = references.reference("cross_entropy_soft", {"x": x, "target": t}, variant, "float64")
    np.testing.assert_allclose(ref.exact["loss"], _soft(x, t, *_p(variant)), rtol=1e-12)
    got = _soft(x, t, *_p(variant), dtype=torch.float32)
    assert check_output("cross_entropy_soft", {"x": x.astype(np.float32), "target": t.astype(np.float32)}, got, F32,
                        params=variant).ok
    biased = got * np.float32(1 + 1e-4)
    assert not check_output("cross_entropy_soft", {"x": x.astype(np.float32), "target": t.astype(np.float32)},
                            biased, F32, params=variant).ok


def test_soft_labels_zero_target_at_a_masked_class():
    x, t = _soft_inputs("zero_at_neg_inf", masked=True)
    assert (t[np.isneginf(x)] == 0).all() and (t[~np.isneginf(x)] > 0).all()
    xs = {"x": x.astype(np.float32), "target": t.astype(np.float32)}
    pytorch = _soft(x, t, dtype=torch.float32)  # 0·(-inf) = NaN
    assert np.isnan(pytorch).all()
    assert not check_output("cross_entropy_soft", xs, pytorch, F32).ok  # 0·log 0 = 0 promised by default
    assert check_output("cross_entropy_soft", xs, pytorch, F32, params={"zero_target": "nan"}).ok
    lsm = torch.log_softmax(torch.from_numpy(xs["x"]), -1)
    tt = torch.from_numpy(xs["target"])
    where = (-torch.where(tt == 0, 0.0, tt * lsm).sum(-1)).numpy()
    assert np.isfinite(where).all() and check_output("cross_entropy_soft", xs, where, F32).ok
    hot_x, hot = _soft_inputs("one_hot")
    assert ((hot == 0) | (hot == 1)).all() and (hot.sum(axis=1) == 1).all()
    labels = hot.argmax(axis=1)
    hard = references.reference("cross_entropy", {"x": hot_x, "labels": labels}, {}, "float64").exact["loss"]
    soft = references.reference("cross_entropy_soft", {"x": hot_x, "target": hot}, {}, "float64").exact["loss"]
    np.testing.assert_allclose(soft, hard, rtol=1e-14)
    with pytest.raises(UsageError) as e:
        references.reference("cross_entropy_soft", {"x": x, "target": t}, {"zero_target": "one"}, "float32")
    assert e.value.fix


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("liger_kernel") is None or importlib.util.find_spec("triton") is None,
                    reason="liger-kernel is not installed: pip install liger-kernel==0.8.5 (extra [third-party])")
def test_liger_variants_in_the_interpreter_pass_as_declared_and_fail_undeclared():
    mod = _triton_module(REPO / "kernels" / "third_party" / "liger" / "launchers.py", "liger_launchers_ce")
    x, labels = _inputs(M=6, N=300, ignored=(1, 4))

    def judged(op, params, declared=None, xx=x, ll=labels):
        got, _ = _run(mod.cross_entropy_variants, op, params, xx.copy(), ll)  # Liger writes its gradient over x
        full = {**get_op(op).params, **(params if declared is None else declared)}
        return check_output(op, {"x": xx.astype(np.float32), "labels": ll}, got, F32, "triton_approx", full,
                            {"online": True})

    for op, params in (("cross_entropy", {"label_smoothing": 0.1, "z_loss": 1e-4, "softcap": 30.0}),
                       ("cross_entropy_reduced", {"reduction": "mean", "label_smoothing": 0.1})):
        c = judged(op, params)
        assert c.ok, (op, c.message())
    assert not judged("cross_entropy", {"label_smoothing": 0.1}, declared={}).ok  # smoothing run, plain declared
    assert not judged("cross_entropy", {"softcap": 5.0}, declared={}).ok
    none = np.full(3, IGN)
    mean = {"reduction": "mean", "empty_mean": "zero"}
    assert judged("cross_entropy_reduced", mean, xx=x[:3], ll=none).ok
    assert not judged("cross_entropy_reduced", mean, declared={"reduction": "mean"}, xx=x[:3], ll=none).ok


def test_reduction_on_the_per_row_op_points_to_the_reduced_one():
    from verifier.spec import CallableKernel

    with pytest.raises(SpecError) as e:
        CallableKernel(name="mean-ce", op="cross_entropy", fn=lambda *a: None, dtypes=[F32],
                       params={"reduction": "mean"})
    assert "op='cross_entropy_reduced'" in e.value.fix
    with pytest.raises(SpecError) as e:
        CallableKernel(name="ce-typo", op="cross_entropy", fn=lambda *a: None, dtypes=[F32], params={"smoothing": 0.1})
    assert "declare op=" not in e.value.fix and "label_smoothing" in e.value.fix


def test_a_users_batch_output_gets_a_derived_budget(registry):
    """An op of your own with a '1' output and no error model: the reference's sum over every row is followed as
    any sum (γ(M·N - 1)·Σ|x|), so float32 torch passes and a 5% bias fails."""
    from verifier.ops import register

    def total_lse(inputs, params):
        return {"y": torch.logsumexp(inputs["x"], -1).sum().reshape(1)}

    register(Op("batch_lse_total", inputs={"x": "MxN"}, outputs={"y": "1"}, reference=total_lse))
    x = np.random.default_rng(0).standard_normal((8, 300)).astype(np.float32)
    got = total_lse({"x": torch.from_numpy(x)}, {})["y"].numpy()
    assert check_output("batch_lse_total", {"x": x}, got, F32).ok
    assert not check_output("batch_lse_total", {"x": x}, got * np.float32(1.05), F32).ok


def test_a_callable_may_return_a_batch_value_as_torch_does():
    """F.cross_entropy(..., reduction='mean') is a 0-d tensor: a callable returning it for loss[1] gets it judged
    (copied into the (1,) output); a 0-d value for a per-row output is still that kernel's error."""
    from verifier.declare.usercode import UserCodeError
    from verifier.launch.callable import run_callable
    from verifier.spec import CallableKernel

    def mean(inputs, outputs, params, dt):
        return {"loss": F.cross_entropy(inputs["x"], inputs["labels"], ignore_index=IGN)}

    x, labels = _inputs()
    ins = {"x": torch.from_numpy(x.astype(np.float32)), "labels": torch.from_numpy(labels)}
    out = {"loss": torch.full((1,), float("nan"))}
    spec = CallableKernel(name="torch-mean-0d", op="cross_entropy_reduced", fn=mean, dtypes=[F32])
    run_callable(spec, ins, out, spec.op_params(), F32, "cpu")
    assert check_output("cross_entropy_reduced", {"x": x.astype(np.float32), "labels": labels}, out["loss"].numpy(),
                        F32).ok
    rows = CallableKernel(name="torch-rows-0d", op="cross_entropy", fn=mean, dtypes=[F32])
    with pytest.raises(UserCodeError):
        run_callable(rows, ins, {"loss": torch.full((6,), float("nan"))}, rows.op_params(), F32, "cpu")
