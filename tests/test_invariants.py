"""Invariants accept correct outputs on every catalogue case and reject classic kernel mistakes.

The "kernels" here are small numpy versions: correct ones compute in float32 and round to the
output dtype; wrong ones reproduce a known defect (missing online rescale, -inf identity in a warp
merge, E[x²] - E[x]² variance, bf16 accumulation, a 5% scale error).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from verifier.judge import invariants
from verifier.errors import UsageError
from verifier.inputs.catalogue import catalogue, rand_increasing_rows, rand_mean_gg_std
from verifier.spec import Dtypes, dtypes
from verifier.numerics.ulp import round_to

F32 = np.float32
DTYPES = [dtypes("f32"), dtypes("bf16"), dtypes("f16"), dtypes("bf16", "f32"), dtypes("f32", "bf16")]


def _out(v, dt: Dtypes):
    with np.errstate(invalid="ignore", over="ignore"):
        if dt.output in ("int32", "int8"):
            return v.astype(dt.output)
        return round_to(np.asarray(v, dtype=np.float64), dt.output)


def _f32(a):
    with np.errstate(invalid="ignore"):
        return np.asarray(a).astype(F32)


# ---- correct kernels: float32 math, output rounded -------------------------------------------


def softmax(inp, dt, p):
    x = _f32(inp["x"])
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return {"y": _out(e / e.sum(axis=1, keepdims=True), dt)}


def log_softmax(inp, dt, p):
    x = _f32(inp["x"])
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        t = x - x.max(axis=1, keepdims=True)
        return {"y": _out(t - np.log(np.exp(t).sum(axis=1, keepdims=True)), dt)}


def online_softmax_stats(inp, dt, p):
    x = _f32(inp["x"])
    with np.errstate(invalid="ignore", over="ignore"):
        m = x.max(axis=1)
        return {"m": _out(m, dt), "l": _out(np.exp(x - m[:, None]).sum(axis=1), dt)}


def _rms(h, w, eps, dt):
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        r = F32(1) / np.sqrt((h * h).mean(axis=1, keepdims=True) + F32(eps))
        return _out(h * r * _f32(w), dt)


def rmsnorm(inp, dt, p):
    return {"y": _rms(_f32(inp["x"]), inp["w"], p["eps"], dt)}


def fused_add_rmsnorm(inp, dt, p):
    h = round_to(_f32(inp["x"]) + _f32(inp["residual"]), dt.input)  # stored residual, normalized (vLLM)
    return {"y": _rms(_f32(h), inp["w"], p["eps"], dt), "residual": h}


def layernorm(inp, dt, p):
    x = _f32(inp["x"])
    with np.errstate(invalid="ignore", over="ignore"):
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        return {"y": _out((x - mu) / np.sqrt(var + F32(p["eps"])) * _f32(inp["w"]) + _f32(inp["b"]), dt)}


def reduce_sum(inp, dt, p):
    x = inp["x"]
    if x.dtype.kind == "i":
        return {"y": x.astype(np.int64).sum(axis=1).astype(np.int32)}
    with np.errstate(invalid="ignore", over="ignore"):
        return {"y": _out(_f32(x).sum(axis=1), dt)}


CORRECT = {f.__name__: f for f in (softmax, log_softmax, online_softmax_stats, rmsnorm, fused_add_rmsnorm,
                                   layernorm, reduce_sum)}
PARAMS = {"rmsnorm": {"eps": 1e-6}, "fused_add_rmsnorm": {"eps": 1e-6}, "layernorm": {"eps": 1e-5}}


def _cases():
    for op in CORRECT:
        for dt in DTYPES + ([Dtypes("int8", "int32", "int32")] if op == "reduce_sum" else []):
            for case in catalogue(op, dt):
                yield pytest.param(op, dt, case, id=f"{op}-{dt.tag}-{case.name}")


@pytest.mark.parametrize("op,dt,case", list(_cases()))
def test_correct_kernel_passes_every_case(op, dt, case):
    rng = np.random.default_rng(zlib.crc32(f"{op}/{dt.tag}/{case.name}".encode()))
    p = PARAMS.get(op, {})
    inp = case.make(rng, dt, op, p)
    outs = CORRECT[op](inp, dt, p)
    v = invariants.check(op, inp, outs, dt, p)
    assert v == [], [x.message for x in v]


# ---- classic mistakes: each invariant rejects the wrong output and accepts the right one -----


def _names(violations):
    return {v.invariant for v in violations}


def _online_softmax(x, rescale: bool):
    """Sequential online softmax over each row (float32), as one thread looping over its row."""
    x = _f32(x)
    m = np.full(x.shape[0], -np.inf, F32)
    l = np.zeros(x.shape[0], F32)
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(x.shape[1]):
            m_new = np.maximum(m, x[:, j])
            scale = np.exp(m - m_new) if rescale else F32(1)
            l = l * scale + np.exp(x[:, j] - m_new)
            m = m_new
        return np.exp(x - m[:, None]) / l[:, None]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.tag)
def test_missing_online_rescale_is_caught_on_increasing_rows(dt):
    x = round_to(rand_increasing_rows(np.random.default_rng(1))((4, 200), dt.input), dt.input)
    good = invariants.check("softmax", {"x": x}, {"y": _out(_online_softmax(x, True), dt)}, dt)
    bad = invariants.check("softmax", {"x": x}, {"y": _out(_online_softmax(x, False), dt)}, dt)
    assert good == []
    assert "softmax.sum" in _names(bad)
    (v,) = [v for v in bad if v.invariant == "softmax.sum"]
    assert list(v.rows) == [0, 1, 2, 3] and "worst row" in v.message


def _warp_merge_softmax(x, guard_empty: bool):
    """A 32-lane warp computing (max, sum) with xor-butterfly merges; lane i holds x[:, i] for
    i < d and the identity (-inf, 0) otherwise. Without a guard, merging two empty lanes computes
    exp(-inf - (-inf)) = NaN, which the butterfly spreads to every lane."""
    M, d = x.shape
    m = np.full((M, 32), -np.inf, F32)
    l = np.zeros((M, 32), F32)
    m[:, :d], l[:, :d] = _f32(x), 1
    lanes = np.arange(32)
    with np.errstate(invalid="ignore", over="ignore"):
        for off in (16, 8, 4, 2, 1):
            mo, lo = m[:, lanes ^ off], l[:, lanes ^ off]
            mn = np.maximum(m, mo)
            fa, fb = np.exp(m - mn), np.exp(mo - mn)
            if guard_empty:
                fa, fb = np.where(m == -np.inf, 0, fa), np.where(mo == -np.inf, 0, fb)
            m, l = mn, l * fa + lo * fb
        return np.exp(_f32(x) - m[:, :1]) / l[:, :1]


@pytest.mark.parametrize("d", [1, 7, 15])
def test_neg_inf_identity_merge_nan_is_caught_below_a_warp(d):
    dt = dtypes("f32")
    x = _f32(np.random.default_rng(d).standard_normal((3, d)))
    assert invariants.check("softmax", {"x": x}, {"y": _out(_warp_merge_softmax(x, True), dt)}, dt) == []
    bad = invariants.check("softmax", {"x": x}, {"y": _out(_warp_merge_softmax(x, False), dt)}, dt)
    assert "softmax.finite" in _names(bad)


@pytest.mark.parametrize("d", [16, 31, 32, 33])
def test_unguarded_merge_is_right_when_no_two_empty_lanes_meet(d):
    # The butterfly's first step pairs lane i with i ^ 16: from d = 16 on no two empty lanes meet, so
    # the unguarded merge computes the right values and must pass (the defect needs d <= 15).
    dt = dtypes("f32")
    x = _f32(np.random.default_rng(0).standard_normal((3, min(d, 32))))
    assert invariants.check("softmax", {"x": x}, {"y": _out(_warp_merge_softmax(x, False), dt)}, dt) == []


def _layernorm_stats(x, how):
    x = _f32(x)
    n = F32(x.shape[1])
    if how == "textbook":  # E[x²] - E[x]², sequential float32 sums
        s = np.cumsum(x, axis=1, dtype=F32)[:, -1]
        s2 = np.cumsum(x * x, axis=1, dtype=F32)[:, -1]
        mu = s / n
        return mu, s2 / n - mu * mu
    if how == "welford":
        mu = np.zeros(x.shape[0], F32)
        m2 = np.zeros(x.shape[0], F32)
        for j in range(x.shape[1]):
            delta = x[:, j] - mu
            mu = mu + delta / F32(j + 1)
            m2 = m2 + delta * (x[:, j] - mu)
        return mu, m2 / n
    mu = np.cumsum(x, axis=1, dtype=F32)[:, -1] / n  # two-pass, sequential
    return mu, np.cumsum((x - mu[:, None]) ** 2, axis=1, dtype=F32)[:, -1] / n


@pytest.mark.parametrize("how,caught", [("textbook", True), ("welford", False), ("two_pass", False)])
def test_textbook_variance_is_caught_on_mean_gg_std(how, caught):
    dt, eps = dtypes("f32"), 1e-5
    rng = np.random.default_rng(7)
    x = _f32(rand_mean_gg_std(rng, 1000.0, 1.0)((4, 1024), "float32"))
    w = _f32(1 + 0.1 * rng.standard_normal(1024))
    b = _f32(0.1 * rng.standard_normal(1024))
    mu, var = _layernorm_stats(x, how)
    with np.errstate(invalid="ignore"):
        y = (x - mu[:, None]) / np.sqrt(var[:, None] + F32(eps)) * w + b
    got = invariants.check("layernorm", {"x": x, "w": w, "b": b}, {"y": _out(y, dt)}, dt, {"eps": eps})
    if caught:
        assert _names(got) & {"layernorm.var", "layernorm.finite"}, got
    else:
        assert got == [], [v.message for v in got]


def _lanes_sum(x, acc_dtype):
    """32 lanes each summing every 32nd element sequentially, then a tree over the lanes, all in
    ``acc_dtype`` (rounded after every addition): how a warp-per-row kernel accumulates."""
    M, N = x.shape
    pad = np.zeros((M, -N % 32), dtype=np.float64)
    cols = np.concatenate([np.asarray(x, dtype=np.float64), pad], axis=1).reshape(M, -1, 32)
    acc = np.zeros((M, 32))
    for k in range(cols.shape[1]):
        acc = np.asarray(round_to(acc + cols[:, k], acc_dtype), dtype=np.float64)
    while acc.shape[1] > 1:
        h = acc.shape[1] // 2
        acc = np.asarray(round_to(acc[:, :h] + acc[:, h:], acc_dtype), dtype=np.float64)
    return acc[:, 0]


@pytest.mark.parametrize("dt", [dtypes("bf16", "f32"), dtypes("bf16")], ids=lambda d: d.tag)
@pytest.mark.parametrize("N", [16384, 152064])
def test_bf16_accumulation_of_a_long_row_is_caught(N, dt):
    # declared: float32 accumulation; the wrong kernel accumulates in bfloat16
    x = round_to(np.random.default_rng(3).uniform(0, 1, (2, N)), "bfloat16")
    seq32 = np.cumsum(_f32(x), axis=1, dtype=F32)[:, -1]  # sequential float32: the worst correct order
    assert invariants.check("reduce_sum", {"x": x}, {"y": _out(seq32, dt)}, dt) == []
    assert invariants.check("reduce_sum", {"x": x}, {"y": _out(_lanes_sum(x, "float32"), dt)}, dt) == []
    bad = invariants.check("reduce_sum", {"x": x}, {"y": _out(_lanes_sum(x, "bfloat16"), dt)}, dt)
    assert _names(bad) == {"reduce_sum.sum"}


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.tag)
@pytest.mark.parametrize("N", [7, 1000, 32768])
def test_softmax_five_percent_too_large_is_caught(dt, N):
    x = round_to(np.random.default_rng(N).standard_normal((2, N)), dt.input)
    y = softmax({"x": x}, dt, {})["y"]
    assert invariants.check("softmax", {"x": x}, {"y": y}, dt) == []
    big = _out(np.asarray(y, dtype=np.float64) * 1.05, dt)
    assert "softmax.sum" in _names(invariants.check("softmax", {"x": x}, {"y": big}, dt))


def test_vocab_softmax_bf16_bound_is_met_with_room_and_still_useful():
    # bf16 output of a correct softmax on N = 152064: accepted, and the bound stays below 5%.
    dt = dtypes("bf16")
    x = round_to(np.random.default_rng(0).standard_normal((1, 152064)), "bfloat16")
    y = softmax({"x": x}, dt, {})["y"]
    assert invariants.check("softmax", {"x": x}, {"y": y}, dt, math_mode="precise", online=False) == []
    big = _out(np.asarray(y, dtype=np.float64) * 1.02, dt)
    assert "softmax.sum" in _names(invariants.check("softmax", {"x": x}, {"y": big}, dt, math_mode="precise",
                                                    online=False))


def test_reversed_softmax_row_breaks_order_not_sum():
    dt = dtypes("f32")
    x = _f32(np.random.default_rng(2).standard_normal((3, 64)))
    y = softmax({"x": x}, dt, {})["y"][:, ::-1].copy()
    assert _names(invariants.check("softmax", {"x": x}, {"y": y}, dt)) == {"softmax.order"}


def test_softmax_out_of_range_and_negative_are_caught():
    dt = dtypes("f32")
    x = _f32(np.random.default_rng(2).standard_normal((2, 16)))
    y = softmax({"x": x}, dt, {})["y"].copy()
    y[0, 3] = -1e-3
    y[1, 5] = 1.5
    got = invariants.check("softmax", {"x": x}, {"y": y}, dt)
    (r,) = [v for v in got if v.invariant == "softmax.range"]
    assert list(r.rows) == [0, 1]


def test_log_softmax_invariants():
    dt = dtypes("bf16")
    x = round_to(np.random.default_rng(5).standard_normal((3, 300)), "bfloat16")
    y = log_softmax({"x": x}, dt, {})["y"]
    assert invariants.check("log_softmax", {"x": x}, {"y": y}, dt) == []
    shifted = _out(np.asarray(y, dtype=np.float64) + 0.1, dt)  # forgot part of log(s)
    assert {"log_softmax.logsumexp"} <= _names(invariants.check("log_softmax", {"x": x}, {"y": shifted}, dt))
    pos = _out(np.asarray(y, dtype=np.float64) - np.asarray(y, dtype=np.float64).max() + 0.5, dt)
    assert "log_softmax.nonpositive" in _names(invariants.check("log_softmax", {"x": x}, {"y": pos}, dt))
    rev = np.ascontiguousarray(y[:, ::-1])
    assert "log_softmax.order" in _names(invariants.check("log_softmax", {"x": x}, {"y": rev}, dt))


def test_online_stats_max_and_l_range():
    dt = dtypes("f32")
    x = _f32(np.random.default_rng(4).standard_normal((4, 100)))
    outs = online_softmax_stats({"x": x}, dt, {})
    assert invariants.check("online_softmax_stats", {"x": x}, outs, dt) == []
    wrong_m = {"m": x[:, :32].max(axis=1), "l": outs["l"]}  # max over the first warp only
    assert "online_softmax_stats.max" in _names(invariants.check("online_softmax_stats", {"x": x}, wrong_m, dt))
    small_l = {"m": outs["m"], "l": _f32(outs["l"] * 0 + 0.5)}
    big_l = {"m": outs["m"], "l": _f32(np.full(4, 101.0))}
    for bad in (small_l, big_l):
        got = invariants.check("online_softmax_stats", {"x": x}, bad, dt)
        assert _names(got) == {"online_softmax_stats.l_range"}


@pytest.mark.parametrize("dt", [dtypes("f32"), dtypes("bf16")], ids=lambda d: d.tag)
def test_rmsnorm_ignoring_weights_or_eps_scale_is_caught(dt):
    rng = np.random.default_rng(9)
    x = round_to(rng.standard_normal((4, 1024)), dt.input)
    w = round_to(1 + 0.1 * rng.standard_normal(1024), dt.input)
    p = {"eps": 1e-6}
    assert invariants.check("rmsnorm", {"x": x, "w": w}, rmsnorm({"x": x, "w": w}, dt, p), dt, p) == []
    no_w = rmsnorm({"x": x, "w": np.ones_like(w)}, dt, p)
    assert _names(invariants.check("rmsnorm", {"x": x, "w": w}, no_w, dt, p)) == {"rmsnorm.rms"}
    # sqrt(mean(x²)) without the 1/N: y scaled by 1/32
    wrong = {"y": _out(np.asarray(rmsnorm({"x": x, "w": w}, dt, p)["y"], dtype=np.float64) / 32, dt)}
    assert _names(invariants.check("rmsnorm", {"x": x, "w": w}, wrong, dt, p)) == {"rmsnorm.rms"}


def test_rmsnorm_eps_effect_is_part_of_the_target():
    # Rows tiny compared with eps: the exact rms(y/w) is sqrt(ms/(ms+eps)) << 1; a kernel that ignores
    # eps outputs rms 1 and is rejected, the correct one passes.
    dt, p = dtypes("f32"), {"eps": 1e-2}
    rng = np.random.default_rng(1)
    x = _f32(1e-2 * rng.standard_normal((3, 256)))
    w = _f32(1 + 0.1 * rng.standard_normal(256))
    assert invariants.check("rmsnorm", {"x": x, "w": w}, rmsnorm({"x": x, "w": w}, dt, p), dt, p) == []
    no_eps = rmsnorm({"x": x, "w": w}, dt, {"eps": 0.0})
    assert _names(invariants.check("rmsnorm", {"x": x, "w": w}, no_eps, dt, p)) == {"rmsnorm.rms"}


def test_fused_add_rmsnorm_y_must_match_the_stored_residual():
    dt, p = dtypes("bf16"), {"eps": 1e-6}
    rng = np.random.default_rng(11)
    inp = {"x": round_to(rng.standard_normal((3, 512)), "bfloat16"),
           "residual": round_to(rng.standard_normal((3, 512)), "bfloat16"),
           "w": round_to(1 + 0.1 * rng.standard_normal(512), "bfloat16")}
    good = fused_add_rmsnorm(inp, dt, p)
    assert invariants.check("fused_add_rmsnorm", inp, good, dt, p) == []
    # normalized x alone (forgot to add the residual) while storing x + residual
    forgot = {"y": rmsnorm(inp, dt, p)["y"], "residual": good["residual"]}
    assert _names(invariants.check("fused_add_rmsnorm", inp, forgot, dt, p)) == {"fused_add_rmsnorm.consistent"}


def test_layernorm_mean_shift_is_caught():
    dt, p = dtypes("f32"), {"eps": 1e-5}
    rng = np.random.default_rng(12)
    inp = {"x": _f32(rng.standard_normal((3, 256))), "w": _f32(1 + 0.1 * rng.standard_normal(256)),
           "b": _f32(0.1 * rng.standard_normal(256))}
    y = layernorm(inp, dt, p)["y"]
    wrong = {"y": _f32(y + 0.05 * inp["w"])}  # mean of (y - b)/w off by 0.05
    assert _names(invariants.check("layernorm", inp, wrong, dt, p)) == {"layernorm.mean"}


def test_int8_sum_overflowing_an_int8_accumulator_is_caught():
    dt = Dtypes("int8", "int32", "int32")
    x = np.random.default_rng(0).integers(-128, 128, (3, 300)).astype(np.int8)
    right = x.astype(np.int64).sum(axis=1).astype(np.int32)
    wrapped = x.sum(axis=1, dtype=np.int8).astype(np.int32)
    assert invariants.check("reduce_sum", {"x": x}, {"y": right}, dt) == []
    assert list(invariants.check("reduce_sum", {"x": x}, {"y": right + 1}, dt)[0].rows) == [0, 1, 2]
    assert invariants.check("reduce_sum", {"x": x}, {"y": wrapped}, dt)[0].invariant == "reduce_sum.sum"


# ---- API --------------------------------------------------------------------------------------


def test_findings_and_usage_errors():
    dt = dtypes("f32")
    x = _f32(np.random.default_rng(0).standard_normal((2, 8)))
    y = _f32(softmax({"x": x}, dt, {})["y"] * 2)
    v = invariants.check("softmax", {"x": x}, {"y": y}, dt)
    (f,) = invariants.violations_to_findings(v, kernel="k", dtype="f32", input="normal_small", shape=(2, 8))
    assert f.check == "invariant" and f.message.startswith("softmax.sum:") and f.score > 1 and f.kernel == "k"
    with pytest.raises(UsageError, match="missing"):
        invariants.check("softmax", {"x": x}, {}, dt)
    with pytest.raises(UsageError, match="shape"):
        invariants.check("softmax", {"x": x}, {"y": y[:, :4]}, dt)
    with pytest.raises(UsageError, match="math mode"):
        invariants.check("softmax", {"x": x}, {"y": y}, dt, math_mode="sloppy")
    with pytest.raises(UsageError, match="context"):
        invariants.violations_to_findings(v, colour="red")
