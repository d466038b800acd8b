"""references/: float64 evaluations against mpmath, certification of the rounding, torch semantics.

The central checks:
- every float64 value lies within its a-priori bound of a 50-digit mpmath evaluation, on random and
  adversarial rows (mean >> std, masks, overflow ranges, constant/zero rows, subnormals, NaN/inf), and the
  two evaluations agree on every special value;
- Reference.rounded equals the mpmath value rounded once into the output dtype, element by element,
  including inputs built so the float64 value sits on a rounding midpoint (where plain rounding of the
  float64 value is wrong);
- special-value semantics equal torch CPU float64.
"""
from __future__ import annotations

import math

import ml_dtypes
import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from references import MODULES, reference
from references._common import C_EXP, C_LOG, U, round_mpf
from references.online_softmax import merge
from verifier.errors import UsageError
from verifier.ops import OPS
from verifier.numerics.ulp import round_to

INF, NAN = math.inf, math.nan
NP = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float64": np.float64}


def adversarial_rows(N: int, rng) -> dict[str, np.ndarray]:
    """Named float64 rows of length N (cast to the input dtype by the caller)."""
    r = {
        "randn": rng.standard_normal(N),
        "range_100_102": rng.uniform(100, 102, N),
        "1000pm1": 1000 + rng.choice([-1.0, 1.0], N) * rng.uniform(0.5, 1, N),
        "exp_overflow": rng.standard_normal(N) * 1000,  # exp(x) overflows without the max shift
        "wide_range": np.linspace(-800, 5, N),  # exp(x - m) underflows to 0 / subnormal
        "constant": np.full(N, 3.25),
        "zeros": np.zeros(N),
        "subnormal": rng.choice([-1.0, 1.0], N) * 2.0**-140 * rng.integers(1, 64, N),
    }
    masked = rng.standard_normal(N)
    masked[rng.random(N) < 0.5] = -INF
    masked[0] = 0.5  # keep one finite entry
    r["partial_mask"] = masked
    r["full_mask"] = np.full(N, -INF)
    nan = rng.standard_normal(N)
    nan[N // 2] = NAN
    r["nan"] = nan
    pinf = rng.standard_normal(N)
    pinf[-1] = INF
    r["plus_inf"] = pinf
    return r


def make_inputs(op, x: np.ndarray, dtype, rng) -> dict:
    M, N = x.shape
    npd = NP[dtype]
    inp = {"x": x.astype(npd)}
    if op in ("rmsnorm", "layernorm", "fused_add_rmsnorm"):
        inp["w"] = rng.uniform(0.5, 1.5, N).astype(npd)
    if op == "layernorm":
        inp["b"] = rng.standard_normal(N).astype(npd)
    if op == "fused_add_rmsnorm":
        inp["residual"] = rng.standard_normal((M, N)).astype(npd)
    return inp


def mp_all(op, inputs, params, dps=50) -> dict:
    return MODULES[op].mp(inputs, params, dps=dps)


def assert_within_bound(op, inputs, params):
    """float64 value within its bound of mpmath, special values equal; returns the number of checked elements."""
    vals, bnds = MODULES[op].float64(inputs, params)
    ref = mp_all(op, inputs, params)
    checked = 0
    for k, v in vals.items():
        b = bnds[k]
        assert v.shape == b.shape == ref[k].shape
        assert np.all(b >= 0), f"{op}/{k}: negative bound"
        for idx in np.ndindex(v.shape):
            t = ref[k][idx]
            if mpmath.isnan(t):
                assert math.isnan(v[idx]), f"{op}/{k}{idx}: mpmath NaN, float64 {v[idx]}"
                continue
            if mpmath.isinf(t):
                assert v[idx] == float(t), f"{op}/{k}{idx}: mpmath {t}, float64 {v[idx]}"
                continue
            assert math.isfinite(b[idx]), f"{op}/{k}{idx}: finite result but bound {b[idx]}"
            err = abs(mpmath.mpf(float(v[idx])) - t)
            assert err <= b[idx], f"{op}/{k}{idx}: |float64 - mp| = {mpmath.nstr(err, 5)} > bound {b[idx]:.3e}"
            checked += 1
    return checked


OPS_PARAMS = [
    ("softmax", {}), ("log_softmax", {}), ("online_softmax_stats", {}),
    ("rmsnorm", {"eps": 1e-6}), ("rmsnorm", {"eps": 0.0}),
    ("layernorm", {"eps": 1e-5}), ("layernorm", {"eps": 0.0}),
    ("fused_add_rmsnorm", {"eps": 1e-6}), ("reduce_sum", {}),
]


@pytest.mark.parametrize("N", [1, 7, 31, 32, 33])
@pytest.mark.parametrize("op,params", OPS_PARAMS, ids=lambda v: str(v))
def test_float64_within_bound_of_mpmath(op, params, N):
    rng = np.random.default_rng(N)
    rows = adversarial_rows(N, rng)
    x = np.stack(list(rows.values()))
    for dtype in ("float32", "bfloat16", "float16"):
        checked = assert_within_bound(op, make_inputs(op, x, dtype, rng), params)
        all_nan = op == "layernorm" and params["eps"] == 0 and N == 1  # every row constant: 0 * inf
        assert checked > 0 or all_nan


@pytest.mark.parametrize("op", ["softmax", "rmsnorm", "layernorm", "fused_add_rmsnorm", "reduce_sum"])
def test_float64_inputs_with_huge_and_tiny_values(op):
    """float64 inputs near the float64 range: the rows are scaled, nothing overflows, bounds hold."""
    rng = np.random.default_rng(1)
    x = np.stack([rng.standard_normal(9) * 1e300, rng.standard_normal(9) * 1e-300, rng.standard_normal(9) * 1e150])
    inputs = make_inputs(op, x, "float64", rng)
    params = {"eps": 1e-6} if "norm" in op else {}
    assert assert_within_bound(op, inputs, params) == sum(v.size for v in MODULES[op].float64(inputs, params)[0].values())
    vals, bnds = MODULES[op].float64(inputs, params)
    for k in vals:
        assert np.all(np.isfinite(vals[k])) and np.all(np.isfinite(bnds[k])), k


def test_bounds_are_tight_enough_to_rarely_recompute():
    """On ordinary rows the relative bound is ~N u or better, far below a float32 half-ulp (2**-24)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 1024)).astype(np.float32)
    for op in ("softmax", "log_softmax", "rmsnorm", "fused_add_rmsnorm"):
        vals, bnds = MODULES[op].float64(make_inputs(op, x, "float32", rng), {"eps": 1e-6} if "norm" in op else {})
        rel = bnds["y"] / np.abs(vals["y"])
        assert np.max(rel) < 2.0**-40, op


def test_libm_exp_log_well_inside_assumed_error():
    """The bounds assume numpy's float64 exp/log err <= C_EXP/C_LOG u; measure it, demand a 2x margin."""
    rng = np.random.default_rng(3)
    d = np.concatenate([-rng.uniform(0, 708, 3000), -rng.uniform(0, 1, 1000)])
    s = rng.uniform(1, 5000, 2000)
    e, lg = np.exp(d), np.log(s)
    with mpmath.workdps(40):
        worst_e = max(abs((mpmath.mpf(a) - mpmath.exp(t)) / mpmath.exp(t)) for a, t in zip(e.tolist(), d.tolist()))
        worst_l = max(abs((mpmath.mpf(a) - mpmath.log(t)) / mpmath.log(t)) for a, t in zip(lg.tolist(), s.tolist()))
    assert worst_e <= C_EXP * U / 2 and worst_l <= C_LOG * U / 2, (float(worst_e / U), float(worst_l / U))


# --------------------------------------------------------------------------- rounding and certification

def test_round_mpf_matches_round_to_on_float64_values():
    rng = np.random.default_rng(4)
    v = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-45, 39, 300),
                        [0.0, -(2.0**-200), 448.0, 464.0, 470.0, 1e5, 65520.0, 3.4e38, 2.0**-149, 2.0**-150, 1.0 + 2.0**-8]])
    for name in ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"):
        want = round_to(v, name).astype(np.float64)
        got = np.array([round_mpf(mpmath.mpf(t), name) for t in v.tolist()])
        np.testing.assert_array_equal(got, want, err_msg=name)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=name)


def test_round_mpf_rounds_once_below_float64():
    with mpmath.workprec(200):
        above = mpmath.mpf(1) + mpmath.mpf(2) ** -8 + mpmath.mpf(2) ** -80  # above a bf16 midpoint
        below = mpmath.mpf(1) + mpmath.mpf(2) ** -8 - mpmath.mpf(2) ** -80
        tie = mpmath.mpf(1) + mpmath.mpf(2) ** -8
        assert round_mpf(above, "bfloat16") == 1 + 2.0**-7
        assert round_mpf(below, "bfloat16") == 1.0
        assert round_mpf(tie, "bfloat16") == 1.0  # to even
        assert round_mpf(-above, "bfloat16") == -(1 + 2.0**-7)
        assert round_mpf(mpmath.mpf(1) + mpmath.mpf(2) ** -53 + mpmath.mpf(2) ** -120, "float64") == 1 + 2.0**-52
        assert round_mpf(mpmath.mpf(10) ** 40, "float8_e4m3fn") == 448.0
        assert round_mpf(mpmath.mpf(10) ** 40, "float8_e5m2") == INF


def pure_mp_rounding(op, inputs, params, dtypes, dps=80):
    """Every element evaluated in mpmath and rounded once: what Reference.rounded must equal."""
    ref = mp_all(op, inputs, {**OPS[op].params, **params}, dps=dps)
    return {k: np.vectorize(lambda t, n=dtypes[k]: round_mpf(t, n), otypes=[np.float64])(a) for k, a in ref.items()}


def assert_rounded_equals_pure_mp(op, inputs, params, out_dtype, **kw):
    ref = reference(op, inputs, params, out_dtype, **kw)
    want = pure_mp_rounding(op, inputs, params, ref.dtypes)
    for k, w in want.items():
        got = np.asarray(ref.rounded[k]).astype(np.float64)
        np.testing.assert_array_equal(got, w, err_msg=f"{op}/{k}")
    return ref


def test_reduce_sum_near_midpoint_is_recomputed_and_correctly_rounded():
    """float32 terms whose float64 sum is exactly a bf16 midpoint while the exact sum lies above it."""
    x = np.array([[1 + 2.0**-8, 2.0**-60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                  [1 + 2.0**-8, -(2.0**-60)] + [0.0] * 16,
                  [1.5, 0.25] + [0.0] * 16], dtype=np.float32)
    vals, _ = MODULES["reduce_sum"].float64({"x": x}, {})
    assert vals["y"][0] == 1 + 2.0**-8  # float64 lands on the midpoint: plain rounding gives 1.0
    assert round_to(vals["y"][:1], "bfloat16").astype(np.float64)[0] == 1.0
    ref = assert_rounded_equals_pure_mp("reduce_sum", {"x": x}, {}, "bfloat16")
    assert ref.rounded["y"].astype(np.float64).tolist() == [1 + 2.0**-7, 1.0, 1.75]
    assert ref.recomputed == 2


def test_fused_residual_is_the_exact_sum_rounded_once():
    x = np.array([[1 + 2.0**-8, 1 + 2.0**-8, 3.0, -2.0]], dtype=np.float32)
    res = np.array([[2.0**-100, -(2.0**-100), 0.5, 2.0]], dtype=np.float32)
    w = np.ones(4, dtype=np.float32)
    inputs = {"x": x, "residual": res, "w": w}
    ref = assert_rounded_equals_pure_mp("fused_add_rmsnorm", inputs, {}, "bfloat16", residual_dtype="bfloat16")
    assert ref.rounded["residual"].astype(np.float64).tolist() == [[1 + 2.0**-7, 1.0, 3.5, 0.0]]
    assert ref.rounded["residual"].dtype == ml_dtypes.bfloat16 and ref.recomputed >= 2
    # default residual dtype = the residual input's dtype
    assert reference("fused_add_rmsnorm", inputs, {}, "bfloat16").rounded["residual"].dtype == np.float32


def test_exact_tie_rounds_to_even():
    """rmsnorm with eps=0 of a power-of-two constant row is exactly w: a bf16 midpoint stays a tie."""
    x = np.full((1, 4), 2.0, dtype=np.float32)
    w = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 1.0, -(1 + 2.0**-8)], dtype=np.float32)
    ref = assert_rounded_equals_pure_mp("rmsnorm", {"x": x, "w": w}, {"eps": 0.0}, "bfloat16")
    assert ref.rounded["y"].astype(np.float64).tolist() == [[1.0, 1 + 2.0**-6, 1.0, -1.0]]
    assert ref.recomputed == 3


def test_log_softmax_cancellation_is_recomputed():
    """log_softmax of [0, d], d << 0: y0 = -log1p(e^d) is tiny and float64's log(S) gets it wrong.

    An element whose bound interval is wider than the output spacing must be recomputed; for float32 the
    plain rounding of the float64 value is wrong for many of them, the reference is not.
    """
    d = -np.arange(20, 44, dtype=np.float32)
    x = np.stack([np.zeros_like(d), d], axis=1)
    vals, bnds = MODULES["log_softmax"].float64({"x": x}, {})
    v, b = vals["y"][:, 0], bnds["y"][:, 0]
    for out, spacing in (("bfloat16", 2.0**-8), ("float32", 2.0**-23)):
        must = int(np.sum(b >= np.abs(v) * spacing))
        assert must >= 10
        ref = assert_rounded_equals_pure_mp("log_softmax", {"x": x}, {}, out)
        assert ref.recomputed >= must
        if out == "float32":
            naive = round_to(v, out).astype(np.float64)
            assert np.sum(naive != ref.rounded["y"][:, 0].astype(np.float64)) >= 10


@pytest.mark.parametrize("op,params", OPS_PARAMS, ids=lambda v: str(v))
@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float8_e4m3fn"])
def test_rounded_equals_pure_mpmath_rounding(op, params, out_dtype):
    rng = np.random.default_rng(5)
    rows = adversarial_rows(7, rng)
    x = np.stack(list(rows.values()))
    assert_rounded_equals_pure_mp(op, make_inputs(op, x, "float32", rng), params, out_dtype)


def test_float8_inputs():
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((4, 33)) * 8).astype(ml_dtypes.float8_e4m3fn)
    w = rng.uniform(0.5, 1.5, 33).astype(ml_dtypes.float8_e4m3fn)
    assert assert_within_bound("rmsnorm", {"x": x, "w": w}, {"eps": 1e-6}) == x.size
    assert_rounded_equals_pure_mp("rmsnorm", {"x": x, "w": w}, {}, "float8_e4m3fn")
    assert_rounded_equals_pure_mp("softmax", {"x": x}, {}, "float8_e5m2")


def test_float64_output_certified_only_on_request():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 9)).astype(np.float32)
    plain = reference("softmax", {"x": x}, {}, "float64")
    assert plain.recomputed == 0
    np.testing.assert_array_equal(plain.rounded["y"], plain.exact["y"])
    assert np.all(np.abs(plain.exact["y"] - pure_mp_rounding("softmax", {"x": x}, {}, {"y": "float64"})["y"])
                  <= plain.bound["y"])
    cert = assert_rounded_equals_pure_mp("softmax", {"x": x}, {}, "float64", certify_float64=True)
    assert cert.recomputed > 0


# --------------------------------------------------------------------------- torch semantics

# No rows near the float64 range here: torch's float64 norms overflow in x*x there (the references scale).
SPECIAL_ROWS = [[INF, 1.0, 2.0], [INF, INF, 1.0], [-INF, -INF, -INF], [-INF, 1.0, 2.0], [NAN, 1.0, 2.0],
                [INF, -INF, 0.0], [0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [-1e30, 0.0, 1e30], [5.0, 5.0, 5.0]]


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "rmsnorm", "layernorm"])
@pytest.mark.parametrize("eps", [1e-6, 0.0])
def test_semantics_match_torch_float64(op, eps):
    x = np.array(SPECIAL_ROWS)
    t = torch.from_numpy(x)
    N = x.shape[1]
    w = np.array([0.5, 1.0, 2.0])
    b = np.array([0.0, -1.0, 3.0])
    params = {"eps": eps} if "norm" in op else {}
    if op == "softmax":
        want = torch.softmax(t, -1)
    elif op == "log_softmax":
        want = torch.log_softmax(t, -1)
    elif op == "rmsnorm":
        want = F.rms_norm(t, (N,), torch.from_numpy(w), eps=eps)
    else:
        want = F.layer_norm(t, (N,), torch.from_numpy(w), torch.from_numpy(b), eps=eps)
    inputs = {"x": x, "w": w, "b": b} if op == "layernorm" else ({"x": x, "w": w} if op == "rmsnorm" else {"x": x})
    got = reference(op, inputs, params, "float64").rounded["y"]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-13, atol=0, equal_nan=True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want.numpy()))


def test_zero_row_rmsnorm_is_zero():
    ref = reference("rmsnorm", {"x": np.zeros((2, 5), np.float32), "w": np.ones(5, np.float32)}, {}, "bfloat16")
    assert np.all(ref.rounded["y"].astype(np.float64) == 0) and ref.recomputed == 0


# --------------------------------------------------------------------------- online softmax statistics

def test_online_stats_of_masked_rows_and_merge_identity():
    x = np.array([[-INF, -INF, -INF], [0.0, -INF, 1.0], [NAN, 0.0, 1.0]], dtype=np.float32)
    ref = reference("online_softmax_stats", {"x": x}, {}, "float32")
    m, l = ref.rounded["m"].astype(np.float64), ref.rounded["l"].astype(np.float64)
    assert m[0] == -INF and l[0] == 0.0
    assert m[1] == 1.0 and l[1] == np.float32(1 + math.exp(-1))
    assert math.isnan(m[2]) and math.isnan(l[2])
    empty = (-INF, 0.0)
    for part in [(1.5, 2.0), (-INF, 0.0), (INF, 1.0)]:
        got = merge(part, empty)
        assert got[0] == part[0] and got[1] == part[1]
        got = merge(empty, part)
        assert got[0] == part[0] and got[1] == part[1]
    gm, gl = merge((NAN, 1.0), (0.0, 1.0))
    assert math.isnan(gm) and math.isnan(gl)


def test_online_merge_of_chunks_equals_whole_row():
    rng = np.random.default_rng(7)
    mod = MODULES["online_softmax_stats"]
    x = rng.standard_normal((6, 40)) * 30
    x[0, :20] = -INF  # an all-masked chunk
    x[1, 20:] = -INF
    whole, wb = mod.float64({"x": x}, {})
    a, _ = mod.float64({"x": x[:, :20]}, {})
    b, _ = mod.float64({"x": x[:, 20:]}, {})
    m, l = merge((a["m"], a["l"]), (b["m"], b["l"]))
    np.testing.assert_array_equal(m, whole["m"])
    assert not np.any(np.isnan(l))
    # merge adds a few roundings (exp, *, +) on top of the two partial bounds
    assert np.all(np.abs(l - whole["l"]) <= wb["l"] + 2 * wb["l"] + 8 * U * l)


# --------------------------------------------------------------------------- ints, usage errors, cost

def test_reduce_sum_integers_exact():
    x = np.array([[2**31 - 1] * 4, [-(2**31)] * 4, [1, -1, 2, -2]], dtype=np.int32)
    ref = reference("reduce_sum", {"x": x}, {}, "float32")
    assert ref.exact["y"].tolist() == [4 * (2**31 - 1), -4 * 2**31, 0]
    x8 = np.array([[127, 127, 127], [-128, 1, 0]], dtype=np.int8)
    ref = reference("reduce_sum", {"x": x8}, {}, "int32")
    assert ref.rounded["y"].dtype == np.int32 and ref.rounded["y"].tolist() == [381, -127]
    with pytest.raises(UsageError, match="outside int32"):
        reference("reduce_sum", {"x": x}, {}, "int32")


def test_usage_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(UsageError, match="missing input"):
        reference("rmsnorm", {"x": x}, {}, "float32")
    with pytest.raises(UsageError, match="shape"):
        reference("rmsnorm", {"x": x, "w": np.ones(4, np.float32)}, {}, "float32")
    with pytest.raises(UsageError, match="unknown param"):
        reference("softmax", {"x": x}, {"eps": 1.0}, "float32")
    with pytest.raises(UsageError, match="integer output"):
        reference("softmax", {"x": x}, {}, "int32")


def test_reference_is_read_only():
    ref = reference("softmax", {"x": np.zeros((2, 3), np.float32)}, {}, "float32")
    with pytest.raises(ValueError):
        ref.exact["y"][0, 0] = 1.0


def test_cost_256x4096_float32_softmax():
    # Cost is about one float64 pass only if mpmath recomputes a tiny fraction (no timed assertion here).
    rng = np.random.default_rng(8)
    x = rng.standard_normal((256, 4096)).astype(np.float32)
    ref = reference("softmax", {"x": x}, {}, "float32")
    assert ref.recomputed <= x.size * 1e-4
