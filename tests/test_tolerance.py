"""Error budgets: table consistency, overrides, condition-awareness, and per-op budgets that pass
correct float32 simulations of each kernel while failing real defects."""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import references
from verifier.judge import tolerance as T
from verifier.judge.compare import compare
from verifier.errors import UsageError
from verifier.spec import Dtypes, dtypes

f32 = np.float32
bf16 = ml_dtypes.bfloat16
DOC = Path(__file__).resolve().parents[1] / "docs" / "tolerances.md"


def seqsum(a, dtype=f32):
    """Left-to-right sum along the last axis, every partial rounded to ``dtype`` (a serial loop)."""
    s = np.zeros(a.shape[:-1], dtype)
    for j in range(a.shape[-1]):
        s = (s.astype(f32) + a[..., j].astype(f32)).astype(dtype)
    return s


def run(op, inputs, outputs, dt, mode="precise", overrides=None):
    ref = references.reference(op, inputs, {}, dt.output)
    b = T.budget(op, dt, mode, inputs, ref, {}, overrides)
    return compare(outputs, ref, b, dt.output), b


# ---- table, doc, errors, overrides ----------------------------------------------------------

def test_doc_contains_generated_table_and_every_key():
    doc = DOC.read_text()
    assert T.table_markdown() in doc, "docs/tolerances.md is stale: regenerate its table with table_markdown()"
    rows = set(re.findall(r"^\| (\w+) \| (\w+) \| (\w+) \| (\w+) \|", doc, flags=re.M))
    assert set(T.TABLE) <= rows


def test_every_op_and_mode_has_an_entry():
    from verifier.ops import OPS
    from verifier.spec import MATH_MODES

    for op, opdef in OPS.items():
        assert opdef.out_dtypes
        for mode in MATH_MODES:
            for out in opdef.out_dtypes:
                assert T.lookup(op, out, "float32", mode)
    assert OPS["softmax"].out_dtypes == ("float32", "float16", "bfloat16")
    assert T.lookup("cross_entropy", "bfloat16", "float32", "precise")  # a loss kept in the logits' dtype
    with pytest.raises(UsageError, match="output float32 with float32"):
        T.lookup("cross_entropy", "float64", "float64", "precise")  # no float64 row: its lse is float32 math


@pytest.mark.parametrize("args, word", [
    (("softmax", "float8_e4m3fn", "float32", "precise"), "bfloat16"),
    (("layernorm", "bfloat16", "int32", "precise"), "with float16 or bfloat16 accumulation"),
    (("per_token_quant", "float8_e4m3fn", "float16", "precise"), "float8_e4m3fn with float32 accumulation"),
    (("softmax", "float32", "float64", "fast"), "float64 accumulation in math mode 'precise'"),
    (("cross_entropy", "float32", "float64", "precise"), "float32 with float32 accumulation"),
    (("softmax", "bfloat16", "float32", "turbo"), "triton_approx"),
    (("gelu", "bfloat16", "float32", "precise"), "softmax"),
    (("softmax", "bf17", "float32", "precise"), "bfloat16"),
])
def test_unknown_key_is_an_error_naming_what_exists(args, word):
    with pytest.raises(UsageError) as e:
        T.lookup(*args)
    assert word in str(e.value)


def test_unknown_dtype_in_budget_is_an_error():
    x = np.zeros((1, 4), f32)
    ref = references.reference("softmax", {"x": x}, {}, "float32")
    with pytest.raises(UsageError, match="no tolerance"):
        T.budget("softmax", Dtypes("f32", "f32", "int32"), "precise", {"x": x}, ref, {})


def test_overrides_merge_by_max_and_reject_unknown_keys():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 64)).astype(bf16)
    ref = references.reference("softmax", {"x": x}, {}, "bfloat16")
    dt = dtypes("bf16")
    plain = T.budget("softmax", dt, "precise", {"x": x}, ref, {})["y"]
    raised = T.budget("softmax", dt, "precise", {"x": x}, ref, {}, {"base_ulps": 4})["y"]
    per = T.budget("softmax", dt, "precise", {"x": x}, ref, {}, {"y": {"base_ulps": 4}})["y"]
    lowered = T.budget("softmax", dt, "precise", {"x": x}, ref, {}, {"base_ulps": 0})["y"]
    np.testing.assert_allclose(raised - plain, 3.0)
    np.testing.assert_array_equal(per, raised)
    np.testing.assert_array_equal(lowered, plain)  # never lowers
    online = T.budget("softmax", dt, "precise", {"x": x}, ref, {}, {"online": True})["y"]
    assert np.all(online > plain)
    for bad in ({"rtol": 1e-2}, {"y": {"atol": 1}}, {"base_ulps": float("nan")}):
        with pytest.raises(UsageError):
            T.budget("softmax", dt, "precise", {"x": x}, ref, {}, bad)


def test_modes_order_fast_and_triton_looser_than_precise():
    x = np.linspace(-60, 0, 256, dtype=f32)[None]
    ref = references.reference("softmax", {"x": x}, {}, "float32")
    b = {m: T.budget("softmax", dtypes("f32"), m, {"x": x}, ref, {})["y"] for m in ("precise", "fast", "triton_approx")}
    assert np.all(b["fast"] >= b["precise"]) and np.all(b["triton_approx"] >= b["precise"])
    # the argument-dependent exp error grows with |x - max|: far elements gain more than near ones
    gain = b["triton_approx"] / b["precise"]
    assert gain[0, 0] > gain[0, -1]


# ---- condition awareness ---------------------------------------------------------------------

def test_softmax_far_from_max_needs_the_condition_term():
    # one element at 3.7, the rest near -76: x - m ~ -80 is rounded in fp32 (spacing 2^-17 there),
    # which exp turns into a relative error of up to 80·u: tens of fp32 ULPs of a correct kernel.
    rng = np.random.default_rng(3)
    M, N = 256, 8
    x = rng.uniform(-77, -76, (M, N)).astype(f32)
    x[:, 0] = f32(3.7)
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    y = e / e.sum(axis=1, keepdims=True)
    c, b = run("softmax", {"x": x}, y, dtypes("f32"))
    assert c.ok, c.message()
    far = c["y"]
    d = np.array([w.ulps for w in far.worst])
    # a fixed budget equal to the well-conditioned allowance (|x - m| = 0) would reject this kernel
    well_conditioned = b["y"][:, 0].max()
    assert d.max() > well_conditioned, (d.max(), well_conditioned)


# ---- layernorm: mean >> std -------------------------------------------------------------------

def _layernorm_two_pass(x, w, b, eps=1e-5):
    N = x.shape[1]
    mu = seqsum(x) / f32(N)
    d = x - mu[:, None]
    var = seqsum(d * d) / f32(N)
    return (d * (f32(1) / np.sqrt(var + f32(eps)))[:, None]) * w + b


def _layernorm_naive(x, w, b, eps=1e-5):
    N = x.shape[1]
    mu = seqsum(x) / f32(N)
    var = seqsum(x * x) / f32(N) - mu * mu
    with np.errstate(invalid="ignore"):
        return ((x - mu[:, None]) * (f32(1) / np.sqrt(var + f32(eps)))[:, None]) * w + b


def test_layernorm_mean_much_larger_than_std():
    rng = np.random.default_rng(1)
    M, N = 4, 1024
    x = (1000 + rng.uniform(-1, 1, (M, N))).astype(f32)
    w = rng.uniform(0.5, 1.5, N).astype(f32)
    b = rng.uniform(-0.1, 0.1, N).astype(f32)
    inputs = {"x": x, "w": w, "b": b}
    good, bud = run("layernorm", inputs, _layernorm_two_pass(x, w, b), dtypes("f32"))
    assert good.ok, good.message()
    # the correct kernel really is far from exact in output ULPs (what a fixed budget would reject)
    assert good["y"].max_ulps > 1000
    bad, _ = run("layernorm", inputs, _layernorm_naive(x, w, b), dtypes("f32"))
    assert not bad.ok
    # well-conditioned rows keep a tight budget
    xs = rng.standard_normal((M, N)).astype(f32)
    tight, bud2 = run("layernorm", {"x": xs, "w": w, "b": b}, _layernorm_two_pass(xs, w, b), dtypes("f32"))
    assert tight.ok, tight.message()
    assert np.median(bud2["y"]) < np.median(bud["y"]) / 100


# ---- other ops: correct float32 simulations pass, defects fail --------------------------------

def _rmsnorm(x, w, eps=1e-6, acc=f32):
    ms = seqsum(x.astype(f32) ** 2, acc).astype(f32) / f32(x.shape[1])
    return (x.astype(f32) * (f32(1) / np.sqrt(ms + f32(eps)))[:, None]) * w.astype(f32)


def test_rmsnorm_bf16():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 2048)).astype(bf16)
    w = rng.uniform(0.5, 1.5, 2048).astype(bf16)
    good, _ = run("rmsnorm", {"x": x, "w": w}, _rmsnorm(x, w).astype(bf16), dtypes("bf16"))
    assert good.ok, good.message()
    bad, _ = run("rmsnorm", {"x": x, "w": w}, _rmsnorm(x, w, acc=bf16).astype(bf16), dtypes("bf16"))
    assert not bad.ok  # sum of squares accumulated in bf16


def test_fused_add_rmsnorm_both_residual_readings_pass():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 1024)).astype(bf16)
    r = rng.standard_normal((4, 1024)).astype(bf16)
    w = rng.uniform(0.5, 1.5, 1024).astype(bf16)
    h32 = x.astype(f32) + r.astype(f32)
    h16 = h32.astype(bf16)
    inputs = {"x": x, "residual": r, "w": w}
    for h in (h32, h16.astype(f32)):  # normalise the fp32 sum, or the stored bf16 residual (vLLM)
        y = _rmsnorm(h, w).astype(bf16)
        c, _ = run("fused_add_rmsnorm", inputs, {"y": y, "residual": h16}, dtypes("bf16"))
        assert c.ok, c.message()
    wrong = (h32 + f32(0.05)).astype(bf16)  # residual written wrong
    c, _ = run("fused_add_rmsnorm", inputs, {"y": _rmsnorm(h32, w).astype(bf16), "residual": wrong}, dtypes("bf16"))
    assert not c["residual"].ok and c["y"].ok


def test_log_softmax_and_online_stats_fp32():
    rng = np.random.default_rng(6)
    x = (3 * rng.standard_normal((4, 512))).astype(f32)
    m = x.max(axis=1, keepdims=True)
    s = np.exp(x - m).sum(axis=1, keepdims=True)
    c, _ = run("log_softmax", {"x": x}, (x - m) - np.log(s), dtypes("f32"))
    assert c.ok, c.message()
    c, _ = run("log_softmax", {"x": x}, np.log(np.exp(x - m) / s) * f32(1.001), dtypes("f32"))
    assert not c.ok
    # online: running max and rescaled running sum, one element at a time
    mm = np.full(4, -np.inf, f32)
    ll = np.zeros(4, f32)
    for j in range(x.shape[1]):
        new = np.maximum(mm, x[:, j])
        ll = ll * np.exp(mm - new) + np.exp(x[:, j] - new)
        mm = new
    c, _ = run("online_softmax_stats", {"x": x}, {"m": mm, "l": ll}, dtypes("f32"))
    assert c.ok, c.message()
    c, _ = run("online_softmax_stats", {"x": x}, {"m": np.nextafter(mm, f32(np.inf)), "l": ll}, dtypes("f32"))
    assert not c["m"].ok and c["m"].worst[0].allowed == 0  # the max is exact: no ULP to spare


def test_reduce_sum():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 4096)).astype(bf16)
    good, _ = run("reduce_sum", {"x": x}, seqsum(x).astype(bf16), dtypes("bf16"))
    assert good.ok, good.message()
    ones = np.ones((2, 4096), bf16)
    bad, _ = run("reduce_sum", {"x": ones}, seqsum(ones, bf16), dtypes("bf16"))
    assert not bad.ok  # bf16 accumulation stalls at 256
    xi = rng.integers(-100, 100, (3, 1000)).astype(np.int8)
    s = xi.astype(np.int32).sum(axis=1).astype(np.int32)
    ok, b = run("reduce_sum", {"x": xi}, s, Dtypes("int8", "int32", "int32"))
    assert ok.ok and np.all(b["y"] == 0)
    off, _ = run("reduce_sum", {"x": xi}, s + np.int32(1), Dtypes("int8", "int32", "int32"))
    assert not off.ok
