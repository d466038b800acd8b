"""topk_softmax rows holding a NaN logit under a per-element gate (sigmoid, sqrtsoftplus, with or without bias): the
NaN expert is free (torch.topk ranks it largest, other kernels drop it), every other pick must still be the top of
the non-NaN experts, in order, with its value. Before, any distinct picks passed in such a row. Our own minimal torch
routers."""
import numpy as np
import pytest
import torch

from verifier.inputs.catalogue import catalogue
from verifier.judge import Criteria, judge
from verifier.ops import OPS, variant_for
from verifier.spec import dtypes

SIGMOID = {"k": 4, "gate": "sigmoid"}
SIGMOID_RENORM = {"k": 4, "gate": "sigmoid", "renormalize": True, "scaling": 2.5}
SOFTPLUS = {"k": 8, "gate": "sqrtsoftplus", "renormalize": True}
BIASED = {"k": 4, "gate": "sigmoid", "bias": True, "renormalize": True, "sorted": False}
GATES = [SIGMOID, SIGMOID_RENORM, SOFTPLUS, BIASED]
IDS = ["sigmoid", "sigmoid-renorm", "sqrtsoftplus", "bias"]


def _gates(x, p):
    if p["gate"] == "sigmoid":
        return torch.sigmoid(x)
    return torch.sqrt(torch.where(x > 20.0, x, torch.log1p(torch.exp(x))))


def _route(xs, p, how="topk"):
    """how: 'topk' (torch.topk: NaN ranked largest), 'drop' (NaN masked to -inf), 'lowest' (the k lowest: wrong)."""
    x = torch.tensor(np.asarray(xs["x"], dtype=np.float32))
    g = _gates(x, p)
    choice = g + torch.tensor(xs["bias"]) if "bias" in xs else g
    if how == "drop":
        choice = torch.nan_to_num(choice, nan=-float("inf"))
    idx = torch.topk(-choice if how == "lowest" else choice, p["k"], -1).indices
    w = torch.gather(g, -1, idx)
    if p.get("renormalize"):
        w = w / w.sum(-1, keepdim=True)
    return {"values": (w * p.get("scaling", 1.0)).float().numpy(), "indices": idx.int().numpy()}


def _name(p):
    return variant_for("topk_softmax", p)


def _judge(xs, ys, p):
    return judge(Criteria(op=_name(p), dtypes=dtypes("f32"), params={**OPS[_name(p)].params, **p}), xs, ys)


def _case(name, p, seed=0):
    case = next(c for c in catalogue(_name(p), dtypes("f32"), "ci") if c.name == name)
    return case.make(np.random.default_rng(seed), dtypes("f32"), _name(p), p)


def _bad(v):
    return sorted({t.name for t in v.comparison.tensors if not t.ok})


@pytest.mark.parametrize("p", GATES, ids=IDS)
@pytest.mark.parametrize("case", ["topk_nan_logits", "some_nan"])
def test_nan_ranked_largest_or_dropped_both_pass(p, case):
    xs = _case(case, p)
    assert np.isnan(xs["x"]).any()
    for how in ("topk", "drop"):
        v = _judge(xs, _route(xs, p, how), p)
        assert v.ok, (how, v.comparison.message())


@pytest.mark.parametrize("p", GATES, ids=IDS)
def test_the_k_lowest_in_a_nan_row_fail(p):
    """The review's silent pass: one NaN logit, and a router picking the k lowest gates passed."""
    xs = _case("topk_nan_logits", p)
    xs["x"] = xs["x"][:1]  # one NaN in place of the largest logit: the only row judged
    ys = _route(xs, p, "lowest")
    assert np.isnan(xs["x"][0]).sum() == 1 and "indices" in _bad(_judge(xs, ys, p))


def test_a_nan_pick_may_sit_anywhere_but_the_others_stay_in_order():
    p = SIGMOID
    x = np.random.default_rng(2).standard_normal((1, 16)).astype(np.float32)
    x[0, 5] = np.nan
    ys = _route({"x": x}, p)  # NaN first, then the top 3 of the rest
    assert ys["indices"][0, 0] == 5
    moved = {"indices": ys["indices"][:, [1, 2, 0, 3]].copy(), "values": ys["values"][:, [1, 2, 0, 3]].copy()}
    assert _judge({"x": x}, moved, p).ok  # the NaN pick in the middle: free
    swapped = {"indices": ys["indices"][:, [2, 0, 1, 3]].copy(), "values": ys["values"][:, [2, 0, 1, 3]].copy()}
    v = _judge({"x": x}, swapped, p)  # the 2nd largest before the 1st, a NaN pick between them
    first, second = (float(torch.sigmoid(torch.tensor(x[0, ys["indices"][0, j]]))) for j in (1, 2))
    msg = v.comparison["indices"].message()
    assert _bad(v) == ["indices"] and f"expert {ys['indices'][0, 1]} with gate " in msg, msg
    assert "comes after a smaller gate" in msg and "position 2" in msg and first > second


def test_a_wrong_value_at_a_ranked_pick_of_a_nan_row_fails():
    p = SIGMOID
    x = np.random.default_rng(3).standard_normal((1, 16)).astype(np.float32)
    x[0, 0] = np.nan
    ys = _route({"x": x}, p, "drop")
    ys["values"][0, 2] *= 1.01
    assert _bad(_judge({"x": x}, ys, p)) == ["values"]


def test_softmax_rows_with_a_nan_still_take_any_distinct_picks():
    p = {"k": 4, "gate": "softmax"}
    x = np.random.default_rng(4).standard_normal((1, 16)).astype(np.float32)
    x[0, 7] = np.nan
    ys = {"indices": np.array([[15, 0, 3, 9]], np.int32), "values": np.full((1, 4), np.nan, np.float32)}
    assert _judge({"x": x}, ys, p).ok
