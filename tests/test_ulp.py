"""verifier.numerics.ulp against an independent enumeration of every bit pattern of the small formats.

The reference decodes each bit pattern with exact Fraction arithmetic from the format's field
widths (not from ml_dtypes or the module's bit tricks), sorts the distinct finite values, and
takes the position in that order as the rank: ulp distances must equal rank differences, ulp()
must equal the exact gap to the next value, and rounding must follow the midpoints.
"""
from __future__ import annotations

import functools
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from verifier.errors import UsageError
from verifier.numerics import ulp as ulp_module
from verifier.numerics.ulp import round_to, ulp, ulp_distance

# name: (exponent bits, mantissa bits, has_inf). "fn" formats: no inf, only all-ones is NaN.
FORMATS = {
    "bfloat16": (8, 7, True),
    "float16": (5, 10, True),
    "float8_e5m2": (5, 2, True),
    "float8_e4m3fn": (4, 3, False),
}
NP = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
      "float8_e5m2": ml_dtypes.float8_e5m2, "float8_e4m3fn": ml_dtypes.float8_e4m3fn}
UINT = {1: np.uint8, 2: np.uint16}
INF = float("inf")


def decode(bits: int, eb: int, mb: int, has_inf: bool):
    """Exact value of one bit pattern: a Fraction, +-INF, or None for NaN."""
    s, e, m = bits >> (eb + mb), (bits >> mb) & ((1 << eb) - 1), bits & ((1 << mb) - 1)
    bias, emax_field = (1 << (eb - 1)) - 1, (1 << eb) - 1
    if e == emax_field and (has_inf or m == (1 << mb) - 1):
        if has_inf and m == 0:
            return -INF if s else INF
        return None
    mag = Fraction(m, 1 << mb) * Fraction(2) ** (1 - bias) if e == 0 else \
        Fraction((1 << mb) + m, 1 << mb) * Fraction(2) ** (e - bias)
    return -mag if s else mag


class Table:
    def __init__(self, name):
        eb, mb, self.has_inf = FORMATS[name]
        self.name, self.dt = name, np.dtype(NP[name])
        n = 1 << (1 + eb + mb)
        self.bits = np.arange(n, dtype=np.int64).astype(UINT[self.dt.itemsize])
        self.arr = self.bits.view(self.dt)
        self.vals = [decode(b, eb, mb, self.has_inf) for b in range(n)]
        self.nan = np.array([v is None for v in self.vals])
        finite = sorted({v for v in self.vals if v is not None and v not in (INF, -INF)})
        self.sorted = finite  # distinct finite values, +-0 merged
        rank = {v: i for i, v in enumerate(finite)}
        rank[-INF], rank[INF] = -1, len(finite)  # one step past +-max
        self.rank_of = rank
        self.rank = np.array([rank[v] if v is not None else -10**9 for v in self.vals], dtype=np.int64)
        sign = np.where(self.bits >> (eb + mb) == 1, -1.0, 1.0)  # Fraction(0) has no sign: keep -0.0
        self.f64 = np.copysign([float(v) if v is not None else np.nan for v in self.vals], sign)
        self.max = finite[-1]
        self.min_sub = finite[len(finite) // 2 + 1]  # the smallest positive value (0 sits in the middle)


@functools.lru_cache(maxsize=None)
def table(name) -> Table:
    return Table(name)


SMALL = list(FORMATS)


@pytest.mark.parametrize("name", SMALL)
def test_reference_decoder_agrees_with_ml_dtypes(name):
    # The independent decoder and ml_dtypes must agree on every pattern, else the reference is wrong.
    t = table(name)
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when casting its NaNs
        got = t.arr.astype(np.float64)
    assert np.array_equal(np.isnan(got), t.nan)
    assert np.array_equal(got[~t.nan], t.f64[~t.nan])
    assert np.array_equal(np.signbit(got[~t.nan]), np.signbit(t.f64[~t.nan]))
    assert t.min_sub == Fraction(float(ml_dtypes.finfo(t.dt).smallest_subnormal))
    assert float(t.max) == float(ml_dtypes.finfo(t.dt).max)


@pytest.mark.parametrize("name", SMALL)
def test_distance_to_anchors_equals_rank_difference(name):
    t = table(name)
    a = t.arr[~t.nan]
    ranks = t.rank[~t.nan]
    anchors = [Fraction(0), t.min_sub, -t.min_sub, Fraction(1), Fraction(-1), t.max, -t.max]
    for anc in anchors + [INF, -INF]:
        exp = np.full(a.shape, float(anc))
        d = ulp_distance(a, exp, name)
        assert d.dtype == np.float64
        # e4m3fn has no inf: an infinite reference saturates to +-max, as a satfinite kernel writes it
        at = anc if t.has_inf or anc not in (INF, -INF) else (t.max if anc > 0 else -t.max)
        assert np.array_equal(d, np.abs(ranks - t.rank_of[at]).astype(np.float64)), anc
    # -0.0 as expected is the same point as +0.0.
    assert np.array_equal(ulp_distance(a, np.full(a.shape, -0.0), name), np.abs(ranks - t.rank_of[0]).astype(float))


@pytest.mark.parametrize("name", SMALL)
def test_distance_between_neighbours_and_random_pairs(name):
    t = table(name)
    chain = np.array([float(v) for v in t.sorted]).astype(t.dt)  # ascending, one zero
    if t.has_inf:
        chain = np.concatenate([np.array([-np.inf, *chain.astype(float), np.inf]).astype(t.dt)])
    for k in (1, 2, 7):
        assert np.array_equal(ulp_distance(chain[k:], chain[:-k].astype(np.float64), name), np.full(len(chain) - k, k))
        assert np.array_equal(ulp_distance(chain[:-k], chain[k:].astype(np.float64), name), np.full(len(chain) - k, k))
    rng = np.random.default_rng(0)
    ok = np.flatnonzero(~t.nan)
    i, j = rng.choice(ok, 20000), rng.choice(ok, 20000)
    d = ulp_distance(t.arr[i], t.f64[j], name)
    assert np.array_equal(d, np.abs(t.rank[i] - t.rank[j]).astype(np.float64))


@pytest.mark.parametrize("name", SMALL)
def test_signed_zero_nan_inf(name):
    t = table(name)
    z = np.array([0.0, -0.0, 0.0, -0.0]).astype(t.dt)
    assert np.array_equal(ulp_distance(z, np.array([-0.0, 0.0, 0.0, -0.0]), name), np.zeros(4))
    nans = t.arr[t.nan]  # every NaN payload and sign
    assert len(nans) >= 2
    assert np.array_equal(ulp_distance(nans, np.full(nans.shape, np.nan), name), np.zeros(len(nans)))
    assert np.all(ulp_distance(nans, np.ones(nans.shape), name) == np.inf)
    ones = np.ones(len(nans)).astype(t.dt)
    assert np.all(ulp_distance(ones, np.full(len(nans), np.nan), name) == np.inf)
    if t.has_inf:
        infs = np.array([np.inf, -np.inf, np.inf, -np.inf]).astype(t.dt)
        n = len(t.sorted)
        assert np.array_equal(ulp_distance(infs, np.array([np.inf, -np.inf, -np.inf, np.inf]), name),
                              np.array([0, 0, n + 1, n + 1], dtype=float))
        assert np.array_equal(ulp_distance(infs, np.array([1, -1, -1, 1]) * float(t.max), name),
                              np.array([1, 1, n, n], dtype=float))


@pytest.mark.parametrize("name", SMALL)
def test_ulp_is_exact_gap_to_next_value(name):
    t = table(name)
    pos = [v for v in t.sorted if v >= 0]
    gap = {v: nxt - v for v, nxt in zip(pos, pos[1:])}
    gap[t.max] = t.max - pos[-2]  # same binade: the spacing there
    fin = ~t.nan & np.isfinite(t.f64)
    want = np.array([float(gap[abs(v)]) for v, f in zip(t.vals, fin) if f])
    assert np.array_equal(ulp(t.arr[fin], name), want)
    assert np.array_equal(ulp(t.f64[fin], name), want)  # float64 input, same values
    assert ulp(0.0, name) == float(t.min_sub) and ulp(-0.0, name) == float(t.min_sub)
    assert np.all(np.isnan(ulp(t.arr[~fin], name)))


def _neighbour_pairs(t: Table):
    """(lo, hi, even, exact mid) over consecutive non-negative finite values; even = the even pattern."""
    pos = [v for v in t.sorted if v >= 0]
    lo = np.array([float(v) for v in pos[:-1]])
    hi = np.array([float(v) for v in pos[1:]])
    mids = [(a + b) / 2 for a, b in zip(pos, pos[1:])]
    mid = np.array([float(m) for m in mids])
    assert all(Fraction(float(m)) == m for m in mids)  # midpoints are exact float64 values
    lo_bits = lo.astype(t.dt).view(UINT[t.dt.itemsize]).astype(np.int64)
    even = np.where(lo_bits % 2 == 0, lo, hi)
    return lo, hi, even, mid


@pytest.mark.parametrize("name", SMALL)
def test_round_to_nearest_even(name):
    t = table(name)
    lo, hi, even, mid = _neighbour_pairs(t)
    def bits(x):
        return x.view(UINT[t.dt.itemsize])

    for sign in (1.0, -1.0):
        for x, want in ((mid, even), (np.nextafter(mid, -np.inf), lo), (np.nextafter(mid, np.inf), hi),
                        (lo, lo), (hi, hi)):
            got = round_to(sign * x, name)
            assert got.dtype == t.dt
            # compare bit patterns: -mid(0, min_sub) must round to -0, not +0
            assert np.array_equal(bits(got), bits((sign * want).astype(t.dt)))
        # uniformly random points inside each gap go to the nearer end
        rng = np.random.default_rng(1)
        x = lo + (hi - lo) * rng.uniform(0.0, 1.0, lo.shape)
        want = np.where(x < mid, lo, np.where(x > mid, hi, even))
        assert np.array_equal(round_to(sign * x, name).astype(np.float64), sign * want)
    # The tie table matches ml_dtypes for float32-representable inputs (its cast from float32 is direct).
    m32 = np.concatenate([mid, -mid]).astype(np.float32)
    assert np.array_equal(bits(round_to(m32, name)), bits(m32.astype(t.dt)))


def test_round_to_single_rounding_from_float64():
    # Just above a bf16 tie, below float32 resolution: float32-then-bf16 double-rounds down to 1.0.
    x = 1 + 2.0**-8 + 2.0**-40
    assert float(round_to(x, "bfloat16")) == 1 + 2.0**-7
    assert float(round_to(1 + 2.0**-4 + 2.0**-40, "float8_e4m3fn")) == 1.125
    assert float(round_to(1 + 2.0**-3 + 2.0**-40, "float8_e5m2")) == 1.25


@pytest.mark.parametrize("name", ["bfloat16", "float16", "float8_e5m2"])
def test_round_to_ieee_overflow(name):
    t = table(name)
    mx, half = float(t.max), float((t.max - t.sorted[-2]) / 2)
    x = np.array([mx + half, np.nextafter(mx + half, 0), 1e300, np.inf, np.nan])
    for s in (1.0, -1.0):
        got = round_to(s * x, name).astype(np.float64)
        assert np.array_equal(got[:4], s * np.array([np.inf, mx, np.inf, np.inf])) and np.isnan(got[4])


def test_float8_e4m3fn_saturates():
    name = "float8_e4m3fn"
    x = np.array([464.0, 464.0001, 480.0, 1e300, np.inf, np.nextafter(464.0, 0)])
    assert np.array_equal(round_to(x, name).astype(float), np.full(6, 448.0))
    assert np.array_equal(round_to(-x, name).astype(float), np.full(6, -448.0))
    assert np.isnan(float(round_to(np.nan, name)))
    assert np.isnan(float(np.float64(480.0).astype(ml_dtypes.float8_e4m3fn)))  # what we deliberately differ from
    a = np.array([448.0, -448.0, 448.0, 416.0, 448.0]).astype(ml_dtypes.float8_e4m3fn)
    e = np.array([1000.0, -np.inf, np.inf, 1e6, 440.0])
    assert np.array_equal(ulp_distance(a, e, name), np.array([0, 0, 0, 1, 0], dtype=float))


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_wide_float_nextafter_chains(name):
    dt = np.dtype(name)
    fi = np.finfo(dt)
    starts = [dt.type(0), fi.smallest_subnormal, -fi.smallest_subnormal * 5, fi.smallest_normal, -fi.smallest_normal,
              dt.type(1), dt.type(-1), dt.type(3.7), fi.max, -fi.max]
    for s in starts:
        for direction in (np.inf, -np.inf):
            chain = [dt.type(s)]
            while len(chain) < 13 and not np.isinf(chain[-1]):
                with np.errstate(over="ignore"):  # max -> inf is a step we want
                    chain.append(np.nextafter(chain[-1], dt.type(direction)))
            c = np.array(chain, dtype=dt)
            # nextafter steps through -0 and +0 separately; they are one point
            steps = np.concatenate([[0], np.cumsum(~((c[1:] == 0) & (c[:-1] == 0)))])
            d = ulp_distance(c, np.full(c.shape, float(c[0])), name)
            assert np.array_equal(d, steps.astype(float)), (s, direction)
            fin = np.isfinite(c) & (np.abs(c) < fi.max)
            gap = np.nextafter(np.abs(c[fin]), dt.type(np.inf)) - np.abs(c[fin])
            assert np.array_equal(ulp(c[fin], name), gap.astype(np.float64))
    assert ulp(fi.max, name) == float(fi.max - np.nextafter(fi.max, dt.type(0)))
    mx = int(np.array(fi.max, dtype=dt).view(np.uint64 if dt.itemsize == 8 else np.uint32))
    assert ulp_distance(np.array([fi.max], dtype=dt), np.array([-float(fi.max)]), name)[0] == float(2 * mx)
    assert ulp_distance(np.array([np.inf], dtype=dt), np.array([float(fi.max)]), name)[0] == 1.0


def test_float32_round_to_matches_numpy_and_midpoints():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(50000) * np.exp2(rng.integers(-160, 140, 50000))  # subnormals and overflow
    with np.errstate(over="ignore"):
        want = x.astype(np.float32)
    assert np.array_equal(round_to(x, "float32").view(np.uint32), want.view(np.uint32))
    lo = rng.standard_normal(5000).astype(np.float32)
    hi = np.nextafter(lo, np.float32(np.inf))
    mid = (lo.astype(np.float64) + hi) / 2
    even = np.where(lo.view(np.uint32) % 2 == 0, lo, hi)
    assert np.array_equal(round_to(mid, "float32"), even)
    assert np.array_equal(ulp_distance(lo, mid, "float32"), np.where(even == lo, 0.0, 1.0))


def test_wider_actual_must_be_representable():
    t = table("bfloat16")
    ok = ~t.nan
    wide = t.arr[ok].astype(np.float32)
    assert np.array_equal(ulp_distance(wide, np.ones(wide.shape), "bf16"),
                          ulp_distance(t.arr[ok], np.ones(wide.shape), "bf16"))
    with pytest.raises(UsageError, match="not representable in bfloat16"):
        ulp_distance(np.array([1.0, 1 + 2.0**-10], dtype=np.float32), np.ones(2), "bfloat16")
    with pytest.raises(UsageError, match="not representable in float8_e4m3fn"):
        ulp_distance(np.array([np.inf]), np.array([np.inf]), "float8_e4m3fn")
    with pytest.raises(UsageError, match="integer"):
        ulp_distance(np.array([1], dtype=np.int32), np.ones(1), "float16")


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(UsageError, match=r"\(2, 3\).*\(3,\)"):
        ulp_distance(np.zeros((2, 3), np.float32), np.zeros(3), "float32")
    with pytest.raises(UsageError, match=r"\(1, 3\).*\(3,\)"):
        ulp_distance(np.zeros((1, 3), np.float32), np.zeros(3), "float32")


def test_torch_bf16_tensors_bit_exact():
    torch = pytest.importorskip("torch")
    t = table("bfloat16")
    ten = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    bits = ten.view(torch.int16).numpy().view(np.uint16).astype(np.int64)
    ok = ~t.nan[bits]
    ranks = t.rank[bits][ok]
    exp = torch.ones(int(ok.sum()), dtype=torch.float64)
    d = ulp_distance(ten[torch.from_numpy(ok)], exp, "bfloat16")
    assert np.array_equal(d, np.abs(ranks - t.rank_of[Fraction(1)]).astype(float))
    assert np.array_equal(round_to(ten, "bfloat16").view(np.uint16)[ok], bits[ok].astype(np.uint16))
    assert np.array_equal(ulp(ten[torch.from_numpy(ok)], "bf16"), ulp(t.f64[bits][ok], "bf16"), equal_nan=True)


def test_integer_dtypes():
    a = np.array([5, -3, 2**31 - 1, 0], dtype=np.int32)
    e = np.array([5, 3, -(2**31), 0], dtype=np.int64)
    assert np.array_equal(ulp_distance(a, e, "int32"), np.array([0, 6, 2**32 - 1, 0], dtype=float))
    assert np.array_equal(ulp_distance(a, np.array([5.5, -3, 0, np.nan]), "int32"),
                          np.array([0.5, 0, 2**31 - 1, np.inf]))
    assert np.array_equal(ulp_distance(np.array([127.0, -128.0]), np.array([0, 0]), "int8"), [127.0, 128.0])
    with pytest.raises(UsageError, match="non-integer"):
        ulp_distance(np.array([1.5]), np.array([1]), "int32")
    with pytest.raises(UsageError, match="outside the int8 range"):
        ulp_distance(np.array([128], dtype=np.int32), np.array([0]), "int8")
    assert np.array_equal(ulp(np.array([3.0, np.inf]), "int32"), [1.0, np.nan], equal_nan=True)


def test_round_to_rejects_integer_dtype():
    with pytest.raises(UsageError, match="floating-point"):
        round_to(np.ones(2), "int32")


@pytest.mark.parametrize("name, bits, emin, emax", [("float32", 24, -149, 104), ("float16", 11, -24, 16)])
def test_ieee_fast_rounding_is_the_scaled_rounding_bit_for_bit(name, bits, emin, emax):
    # _round64's float32 / float16 path is numpy's cast; the scaled path is what every other dtype uses
    rng = np.random.default_rng(3)
    m = rng.integers(1 << (bits - 1), 1 << bits, 20000).astype(np.float64)
    big = float(np.finfo(name).max)
    tiny = float(np.finfo(name).smallest_subnormal)
    x = np.concatenate([
        rng.standard_normal(200000) * 10.0 ** rng.integers(-47, 40, 200000),
        (m + 0.5) * 2.0 ** rng.integers(emin - 23 + 24 - bits, emax + 24 - bits, 20000),  # exact ties, tiny to inf
        (m + 0.5 + 2.0**-20) * 2.0 ** rng.integers(emin, emax, 20000),  # just past ties: double rounding shows here
        [0.0, -0.0, np.inf, -np.inf, np.nan, big, big * (1 + 2.0**-(bits + 1)), big * (1 + 2.0**-bits), tiny,
         tiny / 2, tiny / 2 * (1 + 2.0**-40), tiny / 4, 3 * tiny / 2, -3 * tiny / 2]])
    with np.errstate(all="ignore"):
        fast, scaled = ulp_module._round64(x, name), ulp_module._round_scaled(x, name)
    same = (fast.view(np.uint64) == scaled.view(np.uint64)) | (np.isnan(fast) & np.isnan(scaled))
    assert same.all(), x[~same][:5]


def test_float32_fast_rounding_is_the_scaled_rounding_bit_for_bit():
    # the float32 case above with its hand-picked edges
    rng = np.random.default_rng(3)
    m = rng.integers(1 << 23, 1 << 24, 20000).astype(np.float64)
    big = float(np.finfo(np.float32).max)
    x = np.concatenate([
        rng.standard_normal(200000) * 10.0 ** rng.integers(-47, 40, 200000),
        (m + 0.5) * 2.0 ** rng.integers(-172, 104, 20000),  # exact ties of float32, subnormal to overflow
        [0.0, -0.0, np.inf, -np.inf, np.nan, big, big * (1 + 2.0**-25), big * (1 + 2.0**-24), 2.0**-149, 2.0**-150,
         2.0**-150 * (1 + 2.0**-40), 2.0**-151, 3 * 2.0**-150, -3 * 2.0**-150, 2.0**-126 * (1 - 2.0**-30)]])
    with np.errstate(all="ignore"):
        fast, scaled = ulp_module._round64(x, "float32"), ulp_module._round_scaled(x, "float32")
    same = (fast.view(np.uint64) == scaled.view(np.uint64)) | (np.isnan(fast) & np.isnan(scaled))
    assert same.all(), x[~same][:5]


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_ulp_from_exponent_bits_is_the_frexp_spacing(name):
    # ulp() builds the spacing from x's float64 exponent field for every dtype but float64; the frexp formula it
    # replaced, over every binade of float64 (subnormals, 0, -0, inf, NaN, the largest values) must agree bit for bit.
    from verifier.numerics.ulp import _float_params

    p, emin, _ = _float_params(name)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(20000) * np.exp2(rng.integers(-1080, 1024, 20000).astype(np.float64))
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -2.2e-308, 1.7976931348623157e308]])
    with np.errstate(invalid="ignore", over="ignore"):
        _, ex = np.frexp(x)
        ex = np.where(x == 0, emin, np.maximum(ex - 1, emin))
        expected = np.where(np.isfinite(x), np.ldexp(1.0, ex - p + 1), np.nan)
    got = ulp(x.reshape(4, -1), name)
    assert got.shape == (4, x.size // 4)
    np.testing.assert_array_equal(got.reshape(-1), expected)
    assert ulp(np.float32(1.0), name).shape == ()
