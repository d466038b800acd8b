"""topk_softmax with a correction bias (DeepSeek-V3's e_score_correction_bias; vLLM's fused_topk_bias, SGLang's
biased top-k): the picks rank gate + bias, the values are the gates without it, renormalized, times scaling
(routed_scaling_factor); sorted=False leaves the picks' order free (torch.topk(sorted=False)). Our own minimal
torch compositions, each with one production mistake."""
import numpy as np
import pytest
import torch

from verifier.judge import Criteria, judge
from verifier.ops import OPS, variant_for
from verifier.spec import dtypes

P = {"k": 4, "gate": "sigmoid", "bias": True, "renormalize": True, "scaling": 2.5, "sorted": False}


def _inputs(M=16, E=32, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((M, E)).astype(np.float32),
            "bias": (0.1 * rng.standard_normal(E)).astype(np.float32)}


def _route(xs, k=4, choose_with_bias=True, weigh_with_bias=False, scaling=2.5, order="sorted"):
    g = torch.sigmoid(torch.tensor(xs["x"]))
    choice = g + torch.tensor(xs["bias"]) if choose_with_bias else g
    idx = torch.topk(choice, k, -1).indices
    if order == "reversed":
        idx = idx.flip(-1)
    w = torch.gather(choice if weigh_with_bias else g, -1, idx)
    w = w / w.sum(-1, keepdim=True) * scaling
    return {"values": w.float().numpy(), "indices": idx.int().numpy()}


def _judge(xs, ys, **params):
    name = variant_for("topk_softmax", {**P, **params})
    assert name == "topk_softmax[bias]"
    c = Criteria(op=name, dtypes=dtypes("f32"), params={**OPS[name].params, **P, **params})
    return judge(c, xs, ys)


def _failing(v):
    return sorted({t.name for t in v.comparison.tensors if not t.ok} | {x.invariant for x in v.violations})


def test_a_right_biased_router_passes_in_any_order():
    xs = _inputs()
    assert _judge(xs, _route(xs)).ok
    assert _judge(xs, _route(xs, order="reversed")).ok  # sorted=False: any order


def test_unsorted_picks_are_wrong_where_the_kernel_promises_sorted():
    xs = _inputs()
    assert _failing(_judge(xs, _route(xs, order="reversed"), sorted=True)) == ["indices"]


@pytest.mark.parametrize("mistake,wrong", [
    ({"choose_with_bias": False}, "indices"),  # ranks the gates alone: picks below the k-th gate + bias
    ({"weigh_with_bias": True}, "values"),  # weights from the biased scores
    ({"scaling": 1.0}, "values"),  # routed_scaling_factor forgotten
])
def test_each_biased_routing_mistake_is_caught(mistake, wrong):
    xs = _inputs()
    assert wrong in _failing(_judge(xs, _route(xs, **mistake)))


def test_without_the_bias_param_the_op_is_unchanged():
    assert OPS["topk_softmax"].inputs == ("x",) and OPS["topk_softmax"].params["bias"] is None
    assert OPS[variant_for("topk_softmax", {"bias": True})].inputs == ("x", "bias")


def test_values_in_the_logits_dtype():
    """vLLM's gpt-oss router writes its weights in the logits' dtype (bf16): values_dtype='bfloat16' compares them
    in bf16 ULPs; as float32 they would be thousands of ULPs off, and a value 2 bf16 ULPs off is still wrong."""
    import ml_dtypes

    xs = {"x": np.random.default_rng(3).standard_normal((8, 32)).astype(ml_dtypes.bfloat16)}
    g = torch.softmax(torch.tensor(xs["x"].astype(np.float32)), -1)
    v, i = torch.topk(g, 4, -1)
    ys = {"values": v.to(torch.bfloat16).float().numpy().astype(ml_dtypes.bfloat16), "indices": i.int().numpy()}
    p = {**OPS["topk_softmax"].params, "k": 4}
    ok = judge(Criteria(op="topk_softmax", dtypes=dtypes("bf16", "f32"), params={**p, "values_dtype": "bfloat16"}),
               xs, ys)
    assert ok.ok
    as_f32 = {**ys, "values": ys["values"].astype(np.float32)}
    assert not judge(Criteria(op="topk_softmax", dtypes=dtypes("bf16", "f32"), params=p), xs, as_f32).ok
    off = {**ys, "values": (ys["values"].astype(np.float32) * (1 + 2 ** -6)).astype(ml_dtypes.bfloat16)}
    assert not judge(Criteria(op="topk_softmax", dtypes=dtypes("bf16", "f32"), params={**p, "values_dtype": "bfloat16"}),
                     xs, off).ok


def _dsv4_like(xs, k=4, gate="sqrtsoftplus", guarded=True):
    """DeepSeek-V4's routing in torch: sqrt(softplus) gates (x past 20 as is), bias for the choice, renormalized
    with a guarded division (a zero sum divides by 1), times 2.5."""
    x = torch.tensor(xs["x"], dtype=torch.float32)
    g = torch.sqrt(torch.where(x > 20, x, torch.log(1 + torch.exp(x)))) if gate == "sqrtsoftplus" else torch.sigmoid(x)
    idx = torch.topk(g + torch.tensor(xs["bias"]), k, -1).indices
    w = torch.gather(g, -1, idx)
    s = w.sum(-1, keepdim=True)
    w = w / (torch.where(s > 0, s, 1.0) if guarded else s) * 2.5
    return {"values": w.numpy(), "indices": idx.int().numpy()}


def test_sqrt_softplus_gates():
    xs = _inputs()
    xs["x"][0, :3] = [25.0, -30.0, 19.5]  # both sides of softplus' threshold, and a gate near 0
    assert _judge(xs, _dsv4_like(xs), gate="sqrtsoftplus", sorted=True).ok
    assert "values" in _failing(_judge(xs, _dsv4_like(xs, gate="sigmoid"), gate="sqrtsoftplus", sorted=True))


@pytest.mark.parametrize("declared,guarded,ok,warns", [("zero", True, True, False), ("nan", True, False, False),
                                                       (None, True, True, True), ("zero", False, False, False),
                                                       (None, False, True, True)])
def test_a_zero_sum_of_picks_is_a_contract(declared, guarded, ok, warns):
    """Rows of -inf logits: every sqrt(softplus) gate is 0, the k picks sum to 0: NaN (0 / 0) or 0, as declared."""
    xs = _inputs()
    xs["x"][1] = -np.inf
    v = _judge(xs, _dsv4_like(xs, guarded=guarded), gate="sqrtsoftplus", sorted=True, zero_sum=declared)
    assert v.ok == ok and bool(v.undeclared) == warns, (v.ok, v.undeclared)


def _raw_logit_router(inputs, outputs, params, dt):
    """Top k of the raw logits by repeated argmax, the winner set to -inf, then a softmax over the k (gpt-oss'
    renormalized path): a row with fewer finite logits than k picks index 0 again (argmax of all -inf)."""
    x = inputs["x"].float().clone()
    vals, idxs = [], []
    for _ in range(params["k"]):
        i = torch.argmax(torch.nan_to_num(x, nan=-float("inf"), neginf=-3e38), -1)
        vals.append(x.gather(-1, i[:, None])[:, 0])
        idxs.append(i)
        x = x.scatter(-1, i[:, None], -float("inf"))
    return {"values": torch.softmax(torch.stack(vals, -1), -1), "indices": torch.stack(idxs, -1).int()}


def test_a_router_for_256_experts_only_meets_the_traps():
    """A kernel refusing every E but 256 once saw ordinary rows only: its duplicate picks on -inf rows passed."""
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import CallableKernel, Contracts

    k = CallableKernel(name="raw-logit-router-e256", op="topk_softmax", fn=_raw_logit_router, dtypes=[dtypes("f32")],
                       params={"k": 4, "renormalize": True}, device="cpu",
                       contracts=Contracts(nan_inputs="unsupported"),
                       supports=lambda M, N, dt: None if N == 256 else "256 experts only")
    report = check_kernel(k, Options(level="ci", device="cpu"))
    assert report.verdict == "fail" and any("topk_e256_neg_inf_gates" in (f.input or "") for f in report.findings), \
        report.findings
