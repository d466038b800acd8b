"""Kernels that accumulate in float16 (or bfloat16) and write a wider output (issue #37): a declared 16-bit
accumulation gets the op's budget with u of that dtype (verifier.judge.tolerance._any_accumulation, docs/tolerances.md
"Any float accumulation"), for every op, whatever the output; an undeclared one still fails, and so does a kernel
worse than the accumulation it declares."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import references
from verifier.battery import check_kernel
from verifier.errors import SpecError
from verifier.judge import tolerance as T
from verifier.judge.compare import compare
from verifier.ops import BUNDLED
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

F16_TO_F32 = dtypes("f16", "f32", acc="f16")


def tree_sum(t, dt):
    """Pairwise sum along the last axis, every partial rounded to ``dt`` (a half2 / warp-shuffle reduction)."""
    t = t.to(dt)
    while t.shape[-1] > 1:
        if t.shape[-1] % 2:
            t = torch.cat([t, torch.zeros_like(t[..., :1])], -1)
        t = t[..., 0::2] + t[..., 1::2]
    return t[..., 0]


def softmax_f16_sum(inputs, outputs, params, dt, drop=False):
    """exp in float32, the row sum in float16, the quotient in float32; ``drop``: the sum misses the row's first term
    (a loop starting at 1)."""
    x = inputs["x"].float()
    e = torch.exp(x - x.max(-1, keepdim=True).values)
    s = tree_sum(e[..., 1:] if drop and e.shape[-1] > 1 else e, torch.float16).float()
    return {"y": e / s[..., None]}


def _check(fn, dt, level="quick", **kw):
    k = CallableKernel(name="softmax-f16-sum", op="softmax", fn=fn, device="cpu", dtypes=[dt])
    return check_kernel(k, Options(level=level, seed=0, device="cpu", **kw))


def test_f16_accumulation_writing_f32_passes_when_declared():
    report = _check(softmax_f16_sum, F16_TO_F32)
    assert report.verdict == "pass", [f.message for f in report.findings]
    assert not report.findings  # no `rounding` finding either: the statistics read the same E
    assert not report.cells[(F16_TO_F32.tag, "rounding")].skipped


def test_the_same_kernel_declared_f32_accumulation_fails():
    report = _check(softmax_f16_sum, dtypes("f16", "f32"))
    assert report.verdict == "fail" and {"value", "invariant"} <= {f.check for f in report.findings}


def test_a_kernel_worse_than_its_declared_f16_accumulation_fails():
    report = _check(lambda i, o, p, d: softmax_f16_sum(i, o, p, d, drop=True), F16_TO_F32)
    assert report.verdict == "fail"
    assert "value" in {f.check for f in report.findings}


def test_an_overflowing_f16_sum_is_not_passed_by_its_wide_band():
    """row_mean of 1024 values near 1000 with a float16 sum: E = 999 is just under |y| = 1000, and the budget (E in
    the spacing at |y| - E = 1) allowed 1.7e10 float32 steps, more than the 9.9e8 to inf: the inf the overflowing
    float16 sum gives passed, and so did 2.1e6. Capped at the steps the band holds (8.4e7 down to 1), both fail; the
    band's ends pass."""
    rng = np.random.default_rng(0)
    x = (1000 + rng.standard_normal((4, 1024))).astype(np.float16)
    ref = references.reference("row_mean", {"x": x}, {}, "float32")
    errs = T.errors("row_mean", F16_TO_F32, "precise", {"x": x}, ref, {})
    y, E = ref.exact["y"], errs.E["y"]
    assert np.all(E < np.abs(y)) and np.all(E > 0.99 * np.abs(y))

    def ok(a):
        return compare({"y": np.asarray(a, np.float32)}, ref, errs.budget(ref), "float32", errors=errs).ok

    assert not ok(np.full(4, np.inf))
    assert not ok(np.full(4, 2.1e6))
    assert ok(y + E) and ok(y - E) and ok(y)


def test_one_rule_gives_every_listed_float_row_and_the_unlisted_pairs():
    """Every float row the table lists is what the rule derives (the 16-bit rows ops listed before included), and
    each op takes float16 / bfloat16 accumulation for any float output it has (not the quantized ones)."""
    for op in BUNDLED:
        for (out, acc, mode), entry in T._entries(op).items():
            if out in ("int8", "int32"):
                continue
            assert T._any_accumulation(op, out, acc, mode) == entry, (op.name, out, acc, mode)
        for acc in ("float16", "bfloat16"):
            for out in op.out_dtypes:
                if op.quantized:
                    with pytest.raises(SpecError, match="float32 accumulation"):
                        T.lookup(op.name, out, acc, "precise")
                else:
                    got = T.lookup(op.name, out, acc, "fast")
                    assert {t: (v.base_ulps, v.kappa) for t, v in got.items()} == \
                        {t: (v.base_ulps, v.kappa) for t, v in T.lookup(op.name, out, "float32", "fast").items()}
    assert T.lookup("rmsnorm", "bfloat16", "float64", "precise")["y"].math.source.startswith("CUDA guide (double)")


def test_f16_accumulation_budget_is_wider_than_f32_by_its_u():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 256)).astype(np.float16)
    w = np.ones(256, np.float16)
    ref = references.reference("rmsnorm", {"x": x, "w": w}, {"eps": 1e-6}, "float32")
    E = {a: T.errors("rmsnorm", dtypes("f16", "f32", acc=a), "precise", {"x": x, "w": w}, ref, {"eps": 1e-6}).E["y"]
         for a in ("f16", "f32")}
    ratio = E["f16"] / E["f32"]
    assert np.all(ratio > 2 ** 12) and np.all(ratio < 2 ** 14)  # u: 2^-11 against 2^-24, eta and c_in aside


def test_cross_entropy_scale_rounds_to_a_16_bit_accumulation():
    """A float32 logit scale that float16 cannot hold is rounded once more by a kernel multiplying in float16."""
    from verifier.numerics.errmodel import F32, Ctx
    from verifier.ops.cross_entropy import capped

    x = np.ones((1, 4))
    p = {"scale": float(np.float32(0.1))}
    err = {u: capped(x, p, Ctx(u=u, eta=0.0, intr=F32["precise"], online=False))[1] for u in (2.0 ** -24, 2.0 ** -11)}
    xs = float(np.float32(0.1))
    np.testing.assert_allclose(err[2.0 ** -24], 2.0 ** -24 * xs)  # fits float32: the product's rounding alone
    np.testing.assert_allclose(err[2.0 ** -11], 2 * 2.0 ** -11 * xs)
