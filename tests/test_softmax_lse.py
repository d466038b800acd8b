"""softmax's and log_softmax's optional output ``lse[M]`` float32 (params {"lse": True}; verifier/ops/softmax_lse.py):
the logsumexp of the row's logits after every declared transform (scale, softcap, ALiBi, mask, causal; a sink is one
more term), in base e or 2 (``lse_base``), a row with no finite lse as the contract ``lse_nonfinite`` says. Before it,
a softmax kernel that also writes its lse (flash-attn's softmax_lse, FlashInfer's log2-sum-exp2, a Triton softmax
kept for a backward) could not be declared: its lse was dropped by the launcher and never judged."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import references
from verifier.errors import SpecError
from verifier.judge import Criteria, check_output, judge
from verifier.ops import get_op
from verifier.spec import dtypes

F32 = dtypes("f32")


def _inputs(M=8, N=96, seed=0, dead=(2,)):
    rng = np.random.default_rng(seed)
    x = (3 * rng.standard_normal((M, N))).astype(np.float32)
    mask = np.where(rng.random((M, N)) < 0.25, -np.inf, 0.0).astype(np.float32)
    mask[list(dead)] = -np.inf
    sinks = rng.standard_normal(M).astype(np.float32)
    slopes = (2.0 ** -(np.arange(M) % 8 + 1)).astype(np.float32)
    return {"x": x, "mask": mask, "sinks": sinks, "alibi_slopes": slopes}


def _logits(ins, p):
    """The transformed logits in float64 torch, written independently of the op's helpers."""
    x = torch.from_numpy(ins["x"]).double() * p.get("scale", 1.0)
    M, N = x.shape
    cap = p.get("softcap", 0.0)
    if cap:
        x = cap * torch.tanh(x / cap)
    i, j = torch.arange(M)[:, None], torch.arange(N)[None, :]
    if p.get("alibi_slopes"):
        x = x - torch.from_numpy(ins["alibi_slopes"]).double()[:, None] * (i - j).abs()
    if p.get("mask"):
        x = x + torch.from_numpy(ins["mask"]).double()
    if p.get("causal"):
        x = x.masked_fill(j > i, float("-inf"))
    if p.get("sinks"):
        x = torch.cat([x, torch.from_numpy(ins["sinks"]).double()[:, None]], 1)
    return x


def _kernel(ins, p, base=None, bug=None):
    """y and lse in float32 as a fused kernel writes them; a fully masked row: y = 0, lse = +inf (flash-attn)."""
    z = _logits(ins, p).float()
    N = ins["x"].shape[1]
    m = z.amax(-1, keepdim=True).nan_to_num(neginf=0.0)
    e = torch.exp(z - m)
    s = e.sum(-1)
    lse = (m[:, 0] + torch.log(s if bug != "no_sink" else e[:, :N].sum(-1)))
    if bug == "no_max":
        lse = torch.log(s)
    if (base or p.get("lse_base", "e")) == "2":
        lse = lse / math.log(2.0)
    lse = torch.where(s == 0, float("inf"), lse)
    y = torch.where(s[:, None] == 0, 0.0, e / s[:, None])[:, :N]
    return {"y": y.numpy(), "lse": lse.numpy()}


def _name(p):
    return get_op("softmax").variant(p).name


def _ins(p, ins):
    return {k: v for k, v in ins.items() if k == "x" or p.get(k)}


CONFIGS = [
    {"scale": 0.125, "mask": True, "causal": True},
    {"softcap": 30.0, "alibi_slopes": True, "sinks": True},
    {"scale": 0.0883883476, "mask": True, "sinks": True, "lse_base": "2"},
]


def test_the_variant_has_the_output_and_the_op_does_not():
    op = get_op("softmax")
    assert op.outputs == ("y",) and "lse" in op.optional_outputs
    v = op.variant({"lse": True, "mask": True})
    assert v.outputs == ("y", "lse") and v.output_dtype("lse", dtypes("bf16")) == "float32"
    assert get_op("log_softmax").variant({"lse": True}).outputs == ("y", "lse")
    with pytest.raises(SpecError):
        op.variant({"lse": True, "lse_nonfinite": "zero"})


@pytest.mark.parametrize("p", CONFIGS)
def test_reference_is_torch_logsumexp_of_the_transformed_logits(p):
    ins = _inputs()
    p = {"lse": True, "masked_rows": "zeros", "lse_nonfinite": "inf", **p}
    ref = references.reference(_name(p), _ins(p, ins), p, "float32")
    want = torch.logsumexp(_logits(ins, p), -1).numpy()
    if p.get("lse_base") == "2":
        want = want / math.log(2.0)
    np.testing.assert_allclose(ref.exact["lse"], want, rtol=1e-12)  # -inf on the dead row (torch's), if no sink


@pytest.mark.parametrize("p", CONFIGS)
def test_a_float32_kernel_passes_and_its_lse_is_judged(p):
    ins = _inputs()
    p = {"lse": True, "masked_rows": "zeros", "lse_nonfinite": "posinf", **p}
    got = _kernel(ins, p)
    c = check_output(_name(p), _ins(p, ins), got, F32, params=p)
    assert c.ok, c.message()
    off = dict(got, lse=got["lse"] * np.float32(1 + 2 ** -17))  # 64 float32 ULPs: past the budget of randn rows
    assert not check_output(_name(p), _ins(p, ins), off, F32, params=p).ok


@pytest.mark.parametrize("bug", ["no_sink", "no_max", "base"])
def test_a_wrong_lse_fails_while_y_is_right(bug):
    ins = _inputs()
    p = {"lse": True, "masked_rows": "zeros", "lse_nonfinite": "posinf", "mask": True, "sinks": True}
    got = _kernel(ins, p, base="2" if bug == "base" else None, bug=None if bug == "base" else bug)
    c = check_output(_name(p), _ins(p, ins), got, F32, params=p)
    assert not c.ok and "lse" in c.message()
    assert np.allclose(got["y"], _kernel(ins, p)["y"])


def _judge(p, ins, got):
    c = Criteria(op=_name(p), dtypes=F32, math_mode="precise", overrides={}, params={**get_op("softmax").params, **p})
    return judge(c, _ins(p, ins), got)


def test_a_dead_rows_lse_is_a_contract():
    ins = _inputs(dead=(2, 5))
    p = {"lse": True, "mask": True, "masked_rows": "zeros"}
    got = _kernel(ins, p)  # +inf on the dead rows: flash-attn's
    v = _judge(p, ins, got)
    assert v.ok and any("lse_nonfinite='posinf'" in w for w in v.undeclared)
    assert not _judge({**p, "lse_nonfinite": "inf"}, ins, got).ok  # declared torch.logsumexp's -inf: a finding
    neg = dict(got, lse=np.where(np.isinf(got["lse"]), -np.inf, got["lse"]).astype(np.float32))
    assert _judge({**p, "lse_nonfinite": "neginf"}, ins, neg).ok
    assert _judge({**p, "lse_nonfinite": "inf"}, ins, neg).ok


def test_two_undeclared_contracts_are_tried_together():
    """A dead row written y = 0 (masked_rows='zeros') and lse = +inf, neither declared: each alone differs from its
    first value, so trying one param at a time (as before) gave a false finding on a correct kernel."""
    ins = _inputs(dead=(2, 5))
    p = {"lse": True, "mask": True}
    v = _judge(p, ins, _kernel(ins, p))
    assert v.ok, v.comparison.message()
    assert {w.split("=")[0] for w in v.undeclared} == {"the outputs follow masked_rows",
                                                       "the outputs follow lse_nonfinite"}


def test_log_softmax_writes_the_same_lse():
    ins = _inputs(dead=())
    p = {"lse": True, "scale": 0.5, "sinks": True}
    z = _logits(ins, p)
    lse = torch.logsumexp(z, -1)
    got = {"y": (z - lse[:, None])[:, :-1].float().numpy(), "lse": lse.float().numpy()}
    name = get_op("log_softmax").variant(p).name
    assert check_output(name, _ins(p, ins), got, F32, params=p).ok
    got["lse"] = torch.logsumexp(z[:, :-1], -1).float().numpy()  # the sink left out
    assert not check_output(name, _ins(p, ins), got, F32, params=p).ok


def test_mpmath_agrees_with_float64():
    from references import softmax as ref_softmax

    ins = _inputs(M=4, N=16, dead=(1,))
    p = {**get_op("softmax").params, "lse": True, "mask": True, "sinks": True, "lse_base": "2", "lse_nonfinite": "inf"}
    vals, bounds = ref_softmax.float64(_ins(p, ins), p)
    mp = ref_softmax.mp(_ins(p, ins), p, rows=[0, 1, 2, 3])["lse"].astype(float)
    np.testing.assert_allclose(mp, vals["lse"], rtol=0, atol=float(np.max(bounds["lse"])) + 1e-15)


def test_logsumexp_is_the_same_lse_alone():
    """Op logsumexp (verifier/ops/logsumexp.py): lse[M] without y, for kernels that keep only the normalizer (Tri Dao's
    Triton logsumexp); before it such a kernel needed an Op of its own, without the lse_nonfinite contract."""
    ins = _inputs(dead=(2,))
    p = {"scale": 0.5, "mask": True}
    name = get_op("logsumexp").variant(p).name
    z = _logits(ins, p)
    m = z.amax(-1, keepdim=True)
    arith = (m[:, 0] + torch.log(torch.exp(z - m).sum(-1))).float().numpy()  # NaN on the dead row
    assert np.isnan(arith[2])
    c = check_output(name, _ins(p, ins), {"lse": arith}, F32, params=p)
    assert c.ok, c.message()
    torch_lse = torch.logsumexp(z, -1).float().numpy()  # -inf there: the contract, undeclared
    c = Criteria(op=name, dtypes=F32, math_mode="precise", overrides={}, params={**get_op("logsumexp").params, **p})
    v = judge(c, _ins(p, ins), {"lse": torch_lse})
    assert v.ok and any("lse_nonfinite='inf'" in w for w in v.undeclared)
    assert not check_output(name, _ins(p, ins), {"lse": arith}, F32, params={**p, "lse_nonfinite": "posinf"}).ok
    bad = arith.copy()
    bad[0] = torch.log(torch.exp(z[0] - m[0]).sum()).item()  # the max not added back
    assert not check_output(name, _ins(p, ins), {"lse": bad}, F32, params=p).ok
    base2 = (torch_lse / np.float32(np.log(2.0))).astype(np.float32)
    p2 = {**p, "lse_base": "2", "lse_nonfinite": "inf"}
    assert check_output(name, _ins(p, ins), {"lse": base2}, F32, params=p2).ok
