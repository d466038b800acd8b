"""Case ce_far_below_zero (and ce_soft_far_below_zero): logits all far below 0. A cross entropy whose running max
starts at 0 instead of -inf (FlagGems' online loop: tmp_max = zeros) takes max(0, x) as its reference point, so every
exp underflows and lse = log 0 = -inf there, while every other catalogue case (rows around 0, or far above it) gives
the right loss: only this case tells it from a correct kernel."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from verifier.inputs.catalogue import catalogue
from verifier.judge import check_output
from verifier.ops import get_op
from verifier.spec import dtypes

F32 = dtypes("f32")


def _lse(x, max_from_zero):
    """float32 lse as a one-block kernel computes it; max_from_zero: the reference point max(0, max x)."""
    m = x.max(-1, keepdim=True).values
    if max_from_zero:
        m = torch.clamp(m, min=0.0)
    return m[:, 0] + torch.log(torch.exp(x - m).sum(-1))


def _loss(inputs, max_from_zero):
    x = torch.from_numpy(inputs["x"].astype(np.float32))
    lab = torch.from_numpy(inputs["labels"].astype(np.int64))
    keep = lab != -100
    x_t = x.gather(1, lab.clamp(min=0)[:, None])[:, 0]
    return torch.where(keep, _lse(x, max_from_zero) - x_t, 0.0).numpy()


def _draw(op, name):
    case = next(c for c in catalogue(op, F32, "ci") if c.name == name)
    return case.make(np.random.default_rng(0), F32, op, dict(get_op(op).params))


def test_the_case_is_in_every_cross_entropy_catalogue():
    for op, name in (("cross_entropy", "ce_far_below_zero"), ("cross_entropy_reduced", "ce_far_below_zero"),
                     ("cross_entropy_soft", "ce_soft_far_below_zero")):
        xs = _draw(op, name)
        assert (xs["x"] < -250).all()
    names = {c.name for c in catalogue("cross_entropy", dtypes("bf16", "f32"), "ci")}
    assert "ce_far_below_zero" in names  # bfloat16 holds -300 too


def test_a_max_started_at_zero_fails_only_here():
    xs = _draw("cross_entropy", "ce_far_below_zero")
    assert check_output("cross_entropy", xs, _loss(xs, False), F32).ok
    bad = check_output("cross_entropy", xs, _loss(xs, True), F32)
    assert not bad.ok
    plain = _draw("cross_entropy", "normal_small")
    assert check_output("cross_entropy", plain, _loss(plain, True), F32).ok  # indistinguishable on ordinary rows


def test_soft_targets_too():
    xs = _draw("cross_entropy_soft", "ce_soft_far_below_zero")
    x, t = torch.from_numpy(xs["x"].astype(np.float32)), torch.from_numpy(xs["target"].astype(np.float32))
    good = -(t * torch.log_softmax(x, -1)).sum(-1)
    assert check_output("cross_entropy_soft", xs, good.numpy(), F32).ok
    bad = (t * (_lse(x, True)[:, None] - x)).sum(-1)
    assert not check_output("cross_entropy_soft", xs, bad.numpy(), F32).ok
    assert torch.isfinite(F.cross_entropy(x, t, reduction="none")).all()


def test_capped_padding_counted_as_classes_fails_here():
    """A one-block kernel loading its row padded with -inf to a power of two, then capping everything: tanh(-inf)
    = -1 turns the padding into logits of -cap, which count as classes (Unsloth's softcapped loss). On rows near
    0 their weight e^(-cap - max) is invisible; on this case's rows every logit caps to about -cap too."""
    xs = _draw("cross_entropy", "ce_far_below_zero")
    M, N = xs["x"].shape
    assert N & (N - 1)  # not a power of two: a block of the next one has padding
    cap = 30.0
    x = cap * torch.tanh(torch.from_numpy(xs["x"].astype(np.float32)) / cap)
    lab = torch.from_numpy(xs["labels"].astype(np.int64))
    keep = lab != -100
    x_t = x.gather(1, lab.clamp(min=0)[:, None])[:, 0]
    pad = torch.full((M, (1 << N.bit_length()) - N), -cap)
    right = torch.where(keep, torch.logsumexp(x, -1) - x_t, 0.0).numpy()
    padded = torch.where(keep, torch.logsumexp(torch.cat([x, pad], 1), -1) - x_t, 0.0).numpy()
    assert check_output("cross_entropy", xs, right, F32, params={"softcap": cap}).ok
    assert not check_output("cross_entropy", xs, padded, F32, params={"softcap": cap}).ok
