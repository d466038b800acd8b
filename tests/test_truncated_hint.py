"""A quantized element one step toward zero is called "(truncated?)" only where that happens on a sizeable share of
the tensor, as truncation does (about half of the elements); a few such elements near a boundary are an
intermediate rounded to a narrower dtype (aiter's RMSNorm + fp8 with its norm rounded to bf16 first: 1.6%), and the
hint would misname them."""
import numpy as np

from verifier.judge.quantized import compare_quantized


def _t(n=400, seed=0):
    return np.random.default_rng(seed).uniform(-100, 100, n)


def test_truncation_on_half_the_elements_is_called_truncated():
    t = _t()
    got = compare_quantized("y", np.trunc(t).astype(np.int8), t, np.full(t.shape, 1e-6), "int8")
    assert not got.ok and "toward zero (truncated?)" in got.worst[0].why, got.worst[0].why


def test_a_few_elements_one_step_toward_zero_are_not_called_truncated():
    t = _t()
    y = np.round(t)
    few = np.flatnonzero(np.abs(t - np.trunc(t)) > 0.5)[:4]  # four elements rounded the other way, toward zero
    y[few] = np.trunc(t[few])
    got = compare_quantized("y", y.astype(np.int8), t, np.full(t.shape, 1e-6), "int8")
    assert not got.ok and got.mismatched == 4
    assert "toward zero" in got.worst[0].why and "truncated" not in got.worst[0].why, got.worst[0].why
