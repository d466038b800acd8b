"""cross_entropy end to end: reference (float64 + mpmath) against torch and mpmath, the derived budget,
the invariants, the label makers, and the Triton kernel in the interpreter with int64 and int32 labels."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import references
from references._common import round_mpf
from verifier.judge import invariants
from verifier.judge import tolerance
from verifier.judge import check_output
from verifier.judge.compare import compare
from verifier.errors import UsageError
from verifier.inputs.catalogue import catalogue, maker, rand_normal
from verifier.ops import OPS
from verifier.spec import dtypes
from verifier.numerics.ulp import round_to, ulp

F32IN = dtypes("f32")
BF16IN = dtypes("bf16", "f32")
IGN = -100
REPO = Path(__file__).resolve().parents[1]


def _torch_loss(x, labels):
    return F.cross_entropy(torch.from_numpy(np.asarray(x, np.float64)), torch.from_numpy(labels.astype(np.int64)),
                           reduction="none", ignore_index=IGN).numpy()


def _mp_loss(row, t):
    with mpmath.workdps(80):
        xs = [mpmath.mpf(float(v)) for v in row]
        m = max(xs)
        return mpmath.log(mpmath.fsum(mpmath.exp(v - m) for v in xs)) - (xs[t] - m)


def _ref(x, labels, out="float32"):
    return references.reference("cross_entropy", {"x": x, "labels": labels}, {}, out)


def test_reference_matches_torch_float64_and_certifies_rounding():
    rng = np.random.default_rng(0)
    x = (3 * rng.standard_normal((16, 1000))).astype(np.float32)
    labels = rng.integers(0, 1000, 16).astype(np.int64)
    labels[[3, 7]] = IGN
    ref = _ref(x, labels)
    want = _torch_loss(x, labels)
    assert np.allclose(ref.exact["loss"], want, rtol=1e-13, atol=0)
    assert ref.exact["loss"][3] == 0 and ref.rounded["loss"][7] == 0
    for i in (0, 5, 15):
        assert ref.rounded["loss"][i] == round_mpf(_mp_loss(x[i], labels[i]), "float32")
    assert ref.dtypes == {"loss": "float32"}


def test_tiny_loss_is_recomputed_in_mpmath_and_rounded_correctly():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 256))
    x[:, 17] += 40.0  # the label holds all but ~1e-16 of the mass: float64's log(S) rounds to 0
    x = x.astype(np.float32)
    labels = np.full(4, 17, np.int64)
    ref = _ref(x, labels)
    assert ref.recomputed >= 1
    for i in range(4):
        exact = _mp_loss(x[i], 17)
        assert 0 < float(exact) < 1e-13
        assert ref.rounded["loss"][i] == round_mpf(exact, "float32")


def test_special_values():
    x = np.zeros((5, 4), np.float32)
    x[0, 1] = np.nan  # ignored row: 0 whatever it holds
    x[1, 2] = -np.inf  # label on -inf: +inf
    x[2, 0] = np.inf  # +inf in the row: NaN
    x[3, :] = -np.inf  # all -inf: NaN
    x[4, 3] = np.nan
    labels = np.array([IGN, 2, 1, 0, 0], np.int64)
    got = _ref(x, labels).rounded["loss"]
    assert got[0] == 0 and got[1] == np.inf and np.isnan(got[2]) and np.isnan(got[3]) and np.isnan(got[4])
    t = _torch_loss(x, labels)
    assert t[0] == 0 and t[1] == np.inf and np.isnan(t[2:]).all()  # same semantics as torch


def test_reference_rejects_bad_labels_with_a_fix():
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(UsageError, match="outside \\[0, 4\\)"):
        _ref(x, np.array([0, 4], np.int64))
    with pytest.raises(UsageError, match="dtype"):
        _ref(x, np.array([0.0, 1.0], np.float32))
    with pytest.raises(UsageError, match="shape"):
        _ref(x, np.array([0, 1, 2], np.int64))


def _budget_check(x, labels, loss, dt=F32IN, mode="precise", overrides=None):
    inputs = {"x": x, "labels": labels}
    return check_output("cross_entropy", inputs, {"loss": loss}, dt, mode, overrides=overrides)


def test_budget_passes_fp32_torch_and_rejects_a_small_bias():
    rng = np.random.default_rng(2)
    x = (2 * rng.standard_normal((32, 4096))).astype(np.float32)
    labels = rng.integers(0, 4096, 32).astype(np.int64)
    good = F.cross_entropy(torch.from_numpy(x), torch.from_numpy(labels), reduction="none").numpy()
    assert _budget_check(x, labels, good).ok
    bad = (good * np.float32(1 + 2**-12)).astype(np.float32)  # 0.02% too large: 4096 ulps at ~8
    assert not _budget_check(x, labels, bad).ok
    ref = _ref(x, labels)
    b = tolerance.budget("cross_entropy", F32IN, "precise", {"x": x, "labels": labels}, ref)["loss"]
    # derived: gamma(N - 1) of the any-order sum, ~2.4e-4 absolute at N = 4096, ~260 ULPs of a loss ~8
    assert 100 < b.max() < 600


def test_budget_of_a_tiny_loss_follows_the_input_and_the_invariant_bounds_it():
    """The kappa comes from the row, not the loss: E ~ (|m| + N)·u absolutely is many ULPs of a loss of
    ~1e-9 (the ULP budget degenerates once E > loss), so the logsumexp invariant bounds it absolutely."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 256))
    x[:, 5] += 25.0
    x = x.astype(np.float32)
    labels = np.full(4, 5, np.int64)
    inp = {"x": x, "labels": labels}
    ref = _ref(x, labels)
    loss = ref.rounded["loss"]
    assert (loss > 0).all() and (loss < 1e-7).all()
    b = tolerance.budget("cross_entropy", F32IN, "precise", inp, ref)["loss"]
    assert (b > 1e6).all()
    assert _budget_check(x, labels, np.zeros(4, np.float32)).ok  # 0 is within E (~1.5e-5) of ~1e-9: honest
    assert invariants.check("cross_entropy", inp, {"loss": loss}, F32IN) == []
    assert invariants.check("cross_entropy", inp, {"loss": np.zeros(4, np.float32)}, F32IN) == []
    off = loss + np.float32(1e-3)
    assert not _budget_check(x, labels, off).ok  # E over a subnormal spacing could not see it; the band can
    # (verifier.judge.compare.through_zero: E >= loss, so the judge bounds |y - loss| <= E absolutely)...
    assert _names(invariants.check("cross_entropy", inp, {"loss": off}, F32IN)) == {"cross_entropy.logsumexp"}


def test_lse_without_max_subtraction_fails_on_large_logits():
    x = np.random.default_rng(4).uniform(90, 100, (4, 128)).astype(np.float32)
    labels = np.arange(4, dtype=np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = (np.log(np.exp(x).sum(axis=1)) - x[np.arange(4), labels]).astype(np.float32)
    assert not _budget_check(x, labels, naive).ok
    v = invariants.check("cross_entropy", {"x": x, "labels": labels}, {"loss": naive}, F32IN)
    assert "cross_entropy.finite" in {w.invariant for w in v}


def _names(v):
    return {w.invariant for w in v}


def test_invariants_hold_for_torch_and_each_catches_its_defect():
    rng = np.random.default_rng(5)
    x = (3 * rng.standard_normal((8, 512))).astype(np.float32)
    labels = rng.integers(0, 512, 8).astype(np.int64)
    labels[2] = IGN
    x[2, 0] = np.nan
    good = F.cross_entropy(torch.from_numpy(x), torch.from_numpy(labels), reduction="none",
                           ignore_index=IGN).numpy()
    inp = {"x": x, "labels": labels}
    assert invariants.check("cross_entropy", inp, {"loss": good}, F32IN) == []
    bad = good.copy()
    bad[2] = 1.0
    assert _names(invariants.check("cross_entropy", inp, {"loss": bad}, F32IN)) == {"cross_entropy.ignored"}
    bad = good.copy()
    bad[0] = -0.5
    assert {"cross_entropy.nonneg", "cross_entropy.lower"} <= _names(invariants.check("cross_entropy", inp,
                                                                                      {"loss": bad}, F32IN))
    m_minus = (x.max(axis=1) - x[np.arange(8), np.where(labels == IGN, 0, labels)]).astype(np.float32)
    bad = good.copy()
    bad[1] = max(m_minus[1] * np.float32(0.9), 0)  # below max(x) - x[label] but still >= 0
    got = _names(invariants.check("cross_entropy", inp, {"loss": bad}, F32IN))
    assert {"cross_entropy.lower", "cross_entropy.logsumexp"} == got
    bad = good.copy()
    bad[3] = good[3] * np.float32(1.001)  # 0.1% too large
    assert _names(invariants.check("cross_entropy", inp, {"loss": bad}, F32IN)) == {"cross_entropy.logsumexp"}
    bad = good.copy()
    bad[4] = np.nan
    assert _names(invariants.check("cross_entropy", inp, {"loss": bad}, F32IN)) == {"cross_entropy.finite"}


def test_label_makers_per_policy_and_dtype():
    rng = np.random.default_rng(6)
    dt = BF16IN
    x = maker(6, 40, rand_normal)(rng, dt, "cross_entropy")
    lab = x["labels"]
    assert lab.dtype == np.int64 and lab.shape == (6,)
    ign = lab == IGN
    assert ign.any() and not ign.all() and ((lab[~ign] >= 0) & (lab[~ign] < 40)).all()
    x32 = maker(6, 40, rand_normal)(rng, dt, "cross_entropy", {"label_dtype": "int32"})
    assert x32["labels"].dtype == np.int32
    with pytest.raises(UsageError, match="label_dtype"):
        maker(2, 4, rand_normal)(rng, dt, "cross_entropy", {"label_dtype": "float32"})
    by = {c.name: c for c in catalogue("cross_entropy", dt)}
    first = by["ce_label_first"].make(rng, dt, "cross_entropy")["labels"]
    last = by["ce_label_last"].make(rng, dt, "cross_entropy")["labels"]
    assert (first == 0).all() and (last == by["ce_label_last"].N - 1).all()
    peak = by["ce_label_at_max"].make(rng, dt, "cross_entropy")
    xs = np.asarray(peak["x"], np.float64)
    assert (peak["labels"] == xs.argmax(axis=1)).all()
    masked = by["ce_neg_inf_logits"].make(rng, dt, "cross_entropy")
    xm = np.asarray(masked["x"], np.float64)
    assert np.isneginf(xm).any() and np.isfinite(xm[np.arange(len(xm)), masked["labels"]]).all()
    nf = by["ce_ignored_nonfinite"].make(rng, dt, "cross_entropy")
    xn = np.asarray(nf["x"], np.float64)
    bad_rows = ~np.isfinite(xn).all(axis=1)
    assert bad_rows.any() and (nf["labels"][bad_rows] == IGN).all() and (nf["labels"][~bad_rows] >= 0).all()
    assert {"past_exp_overflow", "partial_neg_inf_mask", "vocab_152064", "ce_vocab_32000"} <= set(by)
    quick = {c.name for c in catalogue("cross_entropy", dt, level="quick")}
    assert {"ce_label_at_max", "ce_ignored_nonfinite"} <= quick and "ce_vocab_32000" not in quick
    assert OPS["cross_entropy"].input_dtype("labels", dt, {"label_dtype": "int32"}) == "int32"


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
@pytest.mark.parametrize("label_dtype", ["int64", "int32"])
def test_triton_kernel_in_the_interpreter_over_several_tiles(label_dtype):
    from verifier.declare.registry import load_spec_file
    from verifier.launch import triton as runner

    if runner._active == "compiled":
        pytest.skip("interpreter tests need their own process: run pytest -m interpreter")
    runner.activate("interpreter")
    spec = next(k for k in load_spec_file(REPO / "kernels" / "triton" / "spec.py")
                if k.op == "cross_entropy" and k.op_params()["label_dtype"] == label_dtype)
    mod = runner.load_module(spec, "interpreter")
    rng = np.random.default_rng(7)
    dt = dtypes("bf16", "f32")
    inputs = maker(5, 300, rand_normal)(rng, dt, "cross_entropy", {"label_dtype": label_dtype})
    inputs["x"][1, :] = round_to(np.full(300, 95.0), "bfloat16")  # past exp overflow: max subtraction needed
    inputs["labels"][1] = 299  # the last class, in the last (partial) tile
    tx = {k: torch.from_numpy(np.asarray(v).view(np.int16)).view(torch.bfloat16) if k == "x"
          else torch.from_numpy(v) for k, v in inputs.items()}
    loss = torch.full((5,), float("nan"), dtype=torch.float32)
    mod.launch(tx, {"loss": loss}, spec.op_params(), dt, block=64)
    got = loss.numpy()
    c = check_output("cross_entropy", inputs, {"loss": got}, dt, "triton_approx", spec.op_params(),
                     {"online": True})
    assert c.ok, c.message()
    assert got[1] == np.float32(np.log(300.0)) or abs(got[1] - np.log(300.0)) < 1e-5
    assert (got[inputs["labels"] == IGN] == 0).all()
    wrong = got.copy()
    wrong[0] += np.float32(1e-3)
    assert not compare({"loss": wrong}, references.reference("cross_entropy", inputs, spec.op_params(), "float32"),
                       tolerance.budget("cross_entropy", dt, "triton_approx", inputs,
                                        references.reference("cross_entropy", inputs, spec.op_params(), "float32"),
                                        spec.op_params(), {"online": True}), "float32").ok
