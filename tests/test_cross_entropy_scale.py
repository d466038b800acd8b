"""The logit scale of cross entropy (param ``scale``: flash-attn's logit_scale, Unsloth's logit_scaling for Cohere):
the logits x·scale before the softcap and everything else, on cross_entropy, cross_entropy_reduced and
cross_entropy_soft; the reference against PyTorch on scaled logits, the budget passing a float32 kernel (a scale
that is a float32 and one that is not) and rejecting the ways a kernel gets it wrong."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import references
from verifier.judge import check_output
from verifier.spec import CallableKernel, dtypes

F32 = dtypes("f32")
IGN = -100
SCALES = (0.0625, 0.8333)  # Cohere's power of two; Command R+'s, not a float32


def _inputs(M=8, N=1000, seed=0):
    rng = np.random.default_rng(seed)
    x = (3 * rng.standard_normal((M, N))).astype(np.float32)
    labels = rng.integers(N, size=M)
    labels[[1, 5]] = IGN
    return x, labels


def _loss(x, labels, scale, eps=0.0, z=0.0, cap=0.0, dtype=torch.float64, reduction="none"):
    """PyTorch's loss of the scaled (then capped) logits, z·lse² as flash-attn adds it."""
    xt = torch.from_numpy(np.asarray(x)).to(dtype) * (scale if dtype == torch.float64 else np.float32(scale))
    if cap:
        xt = cap * torch.tanh(xt / cap)
    lt = torch.from_numpy(labels.astype(np.int64))
    loss = F.cross_entropy(xt, lt, reduction="none", ignore_index=IGN, label_smoothing=eps)
    if z:
        loss = loss + torch.where(lt != IGN, z * torch.logsumexp(xt, -1) ** 2, 0.0)
    if reduction == "mean":
        loss = (loss.sum() / (lt != IGN).sum()).reshape(1)
    return loss.numpy()


VARIANTS = [{}, {"label_smoothing": 0.1, "z_loss": 1e-4}, {"softcap": 5.0}]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_reference_is_pytorch_on_scaled_logits(scale, variant):
    x, labels = _inputs()
    p = {"scale": scale, **variant}
    want = _loss(x, labels, scale, variant.get("label_smoothing", 0.0), variant.get("z_loss", 0.0),
                 variant.get("softcap", 0.0))
    got = references.reference("cross_entropy", {"x": x, "labels": labels}, p, "float64").exact["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    mean = references.reference("cross_entropy_reduced", {"x": x, "labels": labels}, p, "float64").exact["loss"]
    np.testing.assert_allclose(mean, want.sum() / (labels != IGN).sum(), rtol=1e-12)


def test_soft_targets_see_the_scaled_logits():
    x, _ = _inputs()
    t = np.random.default_rng(1).random(x.shape)
    t = (t / t.sum(1, keepdims=True)).astype(np.float32)
    got = references.reference("cross_entropy_soft", {"x": x, "target": t}, {"scale": 0.5}, "float64").exact["loss"]
    want = F.cross_entropy(torch.from_numpy(x).double() * 0.5, torch.from_numpy(t).double(), reduction="none")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_budget_passes_a_float32_kernel(scale, variant):
    x, labels = _inputs()
    got = _loss(x, labels, scale, variant.get("label_smoothing", 0.0), variant.get("z_loss", 0.0),
                variant.get("softcap", 0.0), dtype=torch.float32)
    c = check_output("cross_entropy", {"x": x, "labels": labels}, got, F32, params={"scale": scale, **variant})
    assert c.ok, c.message()
    mean = _loss(x, labels, scale, dtype=torch.float32, reduction="mean")
    assert check_output("cross_entropy_reduced", {"x": x, "labels": labels}, mean, F32, params={"scale": scale}).ok


def test_budget_rejects_a_scale_misapplied():
    x, labels = _inputs()
    xs = {"x": x, "labels": labels}
    xt, lt = torch.from_numpy(x), torch.from_numpy(labels)
    keep = lt != IGN
    unscaled = _loss(x, labels, 1.0, dtype=torch.float32)
    assert not check_output("cross_entropy", xs, unscaled, F32, params={"scale": 0.0625}).ok
    # lse of the scaled logits, the label's logit read raw (a kernel scaling the row but not its reload)
    raw_label = torch.where(keep, torch.logsumexp(xt * 0.0625, -1) - xt.gather(1, lt.clamp(min=0)[:, None])[:, 0],
                            0.0).numpy()
    assert not check_output("cross_entropy", xs, raw_label, F32, params={"scale": 0.0625}).ok
    # the scale applied after the softcap, not before it
    after = F.cross_entropy(5.0 * torch.tanh(xt / 5.0) * 0.5, lt, reduction="none", ignore_index=IGN).numpy()
    assert not check_output("cross_entropy", xs, after, F32, params={"scale": 0.5, "softcap": 5.0}).ok
    assert check_output("cross_entropy", xs, _loss(x, labels, 0.5, cap=5.0, dtype=torch.float32), F32,
                        params={"scale": 0.5, "softcap": 5.0}).ok


def test_a_kernel_declares_its_scale():
    def fn(inputs, outputs, params, dt):
        return {"loss": F.cross_entropy(inputs["x"] * params["scale"], inputs["labels"], reduction="none")}

    k = CallableKernel(name="scaled-ce", op="cross_entropy", fn=fn, dtypes=[F32], params={"scale": 0.0625})
    assert k.op_params()["scale"] == 0.0625
    assert CallableKernel(name="plain-ce", op="cross_entropy", fn=fn, dtypes=[F32]).op_params()["scale"] == 1.0
