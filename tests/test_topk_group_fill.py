"""topk_softmax's group_fill: what the dropped groups' experts rank as in grouped routing. '-inf' (the default) is
vLLM's and SGLang's torch paths; 'zero' is Hugging Face's DeepseekV3 router (masked_fill(~score_mask, 0.0)), which
lmdeploy's fused_noaux_tc kernel keeps on purpose: where every kept expert's gate + bias is below 0, the dropped
experts, all tied at exactly 0, are the picks. Before group_fill such a kernel could not be declared (its picks were
a finding on topk_grouped_negative_choice). Our own torch compositions, judged directly."""
import numpy as np
import pytest
import torch

from verifier.errors import SpecError
from verifier.inputs.catalogue import catalogue
from verifier.judge import Criteria, judge
from verifier.ops import OPS, variant_for
from verifier.spec import dtypes

V3 = {"k": 8, "gate": "sigmoid", "bias": True, "renormalize": True, "scaling": 2.5, "n_group": 8, "topk_group": 4}
HF = {**V3, "group_fill": "zero"}


def _route(xs, fill):
    """DeepSeek-V3 routing in torch: top-2-sum group scores of gate + bias, 4 groups kept, the others filled with
    ``fill``, the top 8 largest first, the gates there renormalized and scaled."""
    g = torch.sigmoid(torch.tensor(xs["x"], dtype=torch.float32))
    c = g + torch.tensor(xs["bias"])
    M, E = c.shape
    gs = c.view(M, 8, -1).topk(2, -1)[0].sum(-1)
    kept = torch.zeros_like(gs).scatter(1, gs.topk(4, -1)[1], 1.0).bool().repeat_interleave(E // 8, -1)
    idx = c.masked_fill(~kept, fill).topk(8, -1)[1]
    w = g.gather(1, idx)
    return {"values": (w / w.sum(-1, keepdim=True) * 2.5).numpy(), "indices": idx.int().numpy()}


def _judge(xs, ys, p):
    name = variant_for("topk_softmax", p)
    return judge(Criteria(op=name, dtypes=dtypes("f32"), params={**OPS[name].params, **p}), xs, ys)


def _case(name, p, seed=1):
    op = variant_for("topk_softmax", p)
    case = next(c for c in catalogue(op, dtypes("f32"), "ci") if c.name == name)
    return case.make(np.random.default_rng(seed), dtypes("f32"), op, p)


def test_zero_fill_routing_passes_when_declared_and_fails_when_not():
    xs = _case("topk_grouped_negative_choice", HF)
    hf, vllm = _route(xs, 0.0), _route(xs, float("-inf"))
    assert (hf["indices"] != vllm["indices"]).any()  # the case tells the two apart
    assert _judge(xs, hf, HF).ok
    assert not _judge(xs, hf, V3).ok  # undeclared: the dropped groups' picks are wrong under -inf
    v = _judge(xs, vllm, HF)  # -inf masking declared as zero: its picks (below 0) rank under the dropped zeros
    assert [t.name for t in v.comparison.tensors if not t.ok] == ["indices"]


@pytest.mark.parametrize("name", ["topk_grouped_tied_groups", "topk_grouped_lone_best", "topk_e256_deepseek"])
def test_zero_fill_routing_passes_the_other_grouped_cases(name):
    xs = _case(name, HF)
    assert _judge(xs, _route(xs, 0.0), HF).ok, name


def test_group_fill_is_checked():
    assert OPS["topk_softmax"].params["group_fill"] == "-inf"
    with pytest.raises(SpecError, match="group_fill"):
        _judge(_case("topk_e256_deepseek", V3), {}, {**V3, "group_fill": "nan"})
