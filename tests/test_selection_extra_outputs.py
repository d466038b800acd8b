"""A selection op's integer output beside its picks (vLLM topk_softmax's third output, token_expert_indices[r, j] =
j·M + r, declared with an Op of one's own): compared exactly, and a row whose picks are wrong leaves it to the
picks' finding (it holds no NaN to mark the row). Our own minimal op and outputs."""
import numpy as np
import torch

from verifier.judge import Criteria, judge
from verifier.ops import register
from verifier.spec import Op, Selection, Tensor, dtypes


def _gates(inputs, p):
    return torch.softmax(inputs["x"], -1)


def _at(inputs, p):
    M, k = inputs["indices"].shape
    return {"values": torch.gather(_gates(inputs, p), -1, inputs["indices"]),
            "slots": torch.arange(k)[None, :] * M + torch.arange(M)[:, None]}


def _reference(inputs, p):
    _, i = torch.topk(_gates(inputs, p), p["k"], -1)
    return {**_at({**inputs, "indices": i}, p), "indices": i}


OP = register(Op("test_topk_with_slots", inputs={"x": "MxN"}, params={"k": 2}, reference=_reference,
        outputs={"values": Tensor("Mxk", dtype="float32"), "indices": Tensor("Mxk", dtype="int32"),
                 "slots": Tensor("Mxk", dtype="int32")}, selection=Selection("indices", _gates, _at)))


def _outputs(x, k=2):
    v, i = torch.topk(torch.softmax(torch.tensor(x, dtype=torch.float64), -1), k, -1)
    M = x.shape[0]
    slots = (np.arange(k)[None, :] * M + np.arange(M)[:, None]).astype(np.int32)
    return {"values": v.float().numpy(), "indices": i.int().numpy(), "slots": slots}


def _judge(x, ys):
    return judge(Criteria(op=OP.name, dtypes=dtypes("f32"), params=dict(OP.params)), {"x": x}, ys)


def _failing(v):
    return sorted(t.name for t in v.comparison.tensors if not t.ok)


def test_slots_are_exact():
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    ys = _outputs(x)
    assert _judge(x, ys).ok
    off = {**ys, "slots": ys["slots"] + np.int32(1)}  # one slot number off: no ULP of slack for an integer
    assert _failing(_judge(x, off)) == ["slots"]


def test_a_row_of_duplicate_picks_is_the_picks_finding_only():
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    ys = _outputs(x)
    ys["indices"][2] = ys["indices"][2, 0]  # expert picked twice
    assert _failing(_judge(x, ys)) == ["indices"]
