"""topk_softmax_dense (verifier/ops/topk_dense.py): MoE routing's dense [M, E] combine weights, as DeepSpeed's
topkgating and GShard / Switch routers return them: the gate at the k chosen experts (renormalized over them when
declared), exactly 0 elsewhere, judged tie-aware off the nonzero set (verifier/judge/dense_selection.py). Before it
such a router could not be declared: topk_softmax takes (values[M,k], indices[M,k]) only, and an element-wise
comparison of the dense row with one reference fails every correct router whose tie-break differs."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from op_registry import registry  # noqa: F401 (the fixture)

import references
from verifier.errors import SpecError
from verifier.judge import check_output
from verifier.ops import get_op
from verifier.spec import Op, Selection, Tensor, dtypes

F32 = dtypes("f32")
OP = "topk_softmax_dense"


def _logits(M=8, E=64, seed=0, kind="randn"):
    rng = np.random.default_rng(seed)
    if kind == "ties":  # four values per row: exact ties across the top-k boundary
        return (rng.integers(0, 4, size=(M, E)) * 0.5).astype(np.float32)
    return rng.standard_normal((M, E)).astype(np.float32)


def _dense(x, k=8, renormalize=False, gate="softmax", scaling=1.0, flip=False, threshold=False):
    """The router in float32 torch: gates, torch.topk (on the reversed row when ``flip``: the other tie-break),
    scattered into zeros; ``threshold``: every gate >= the k-th largest kept."""
    t = torch.from_numpy(x).float()
    g = torch.softmax(t, -1) if gate == "softmax" else torch.sigmoid(t)
    if flip:
        v, i = torch.topk(g.flip(-1), k)
        i = g.shape[-1] - 1 - i
    else:
        v, i = torch.topk(g, k)
    if threshold:
        w = torch.where(g >= v[:, -1:], g, 0.0)
        return (w / w.sum(-1, keepdim=True) if renormalize else w).numpy() * scaling
    if renormalize:
        v = v / v.sum(-1, keepdim=True)
    return (torch.zeros_like(g).scatter(-1, i, v * scaling)).numpy()


def _check(x, w, **p):
    return check_output(OP, {"x": x}, {"weights": w.astype(np.float32)}, F32, params=p)


def test_the_op_and_its_reference():
    op = get_op(OP)
    assert op.signature() == "x[M,N] -> weights[M,N] (float32)" and op.selection.dense
    x = _logits()
    p = {**op.params, "renormalize": True, "scaling": 2.5}
    ref = references.reference(OP, {"x": x}, p, "float32")
    g = torch.softmax(torch.from_numpy(x).double(), -1)
    v, i = torch.topk(g, 8)
    want = torch.zeros_like(g).scatter(-1, i, 2.5 * v / v.sum(-1, keepdim=True)).numpy()
    np.testing.assert_allclose(ref.exact["weights"], want, rtol=1e-12)


@pytest.mark.parametrize("p", [{}, {"renormalize": True}, {"gate": "sigmoid", "renormalize": True, "scaling": 2.5}])
def test_a_float32_router_passes_with_either_tie_break(p):
    for kind in ("randn", "ties"):
        x = _logits(kind=kind)
        for flip in (False, True):
            c = _check(x, _dense(x, flip=flip, **p), **p)
            assert c.ok, c.message()


def test_rows_with_fewer_finite_logits_than_k_and_nan_rows():
    x = _logits()
    x[0, 3:] = -np.inf  # three finite gates: five picks have gate 0 and read as not picked
    x[1, 10] = np.nan  # a softmax row of NaN gates
    w = _dense(x, renormalize=True)
    assert (w[0] != 0).sum() == 3
    c = _check(x, w, renormalize=True)
    assert c.ok, c.message()
    g = torch.softmax(torch.from_numpy(x[1:2]), -1)  # DeepSpeed's gates * mask: NaN at every expert of that row
    w[1] = (g * torch.zeros_like(g).scatter(-1, torch.topk(g, 8).indices, 1.0)).numpy()[0]
    assert np.isnan(w[1]).all() and _check(x, w, renormalize=True).ok


def test_ties_kept_all_is_more_than_k_experts():
    x = _logits(kind="ties")
    c = _check(x, _dense(x, renormalize=True, threshold=True), renormalize=True)
    assert not c.ok and "more than k = 8" in c.message()
    x = _logits()  # no ties: the same router is right
    assert _check(x, _dense(x, renormalize=True, threshold=True), renormalize=True).ok


def test_wrong_weights_and_wrong_experts_fail():
    x = _logits()
    right = _dense(x, renormalize=True)
    assert not _check(x, _dense(x), renormalize=True).ok  # not renormalized
    w = right.copy()
    r = 3
    order = np.argsort(-x[r])
    w[r, order[7]], w[r, order[9]] = 0.0, w[r, order[7]]  # the 8th expert swapped for the 10th: no tie there
    c = _check(x, w, renormalize=True)
    assert not c.ok and "is not in the top k" in c.message()
    w = right.copy()
    w[2, np.argmax(x[2])] = 0.0  # the top expert, picked with a real gate, dropped
    assert not _check(x, w, renormalize=True).ok
    w = right.copy()
    w[4, np.argmin(x[4])] = 1e-30  # a tiny weight where 0 is due: a ninth expert
    c = _check(x, w, renormalize=True)
    assert not c.ok and "9 nonzero weights" in c.message()


def test_bf16_logits_and_a_wrong_dtype():
    x = _logits().astype(np.float32)
    xb = torch.from_numpy(x).bfloat16()
    w = _dense(xb.float().numpy(), renormalize=True)
    c = check_output(OP, {"x": xb}, {"weights": w}, dtypes("bf16", "f32"), params={"renormalize": True})
    assert c.ok, c.message()


def test_a_dense_selection_must_name_a_float_mxn_output():
    with pytest.raises(SpecError, match="dense selection"):
        Op("my_dense", inputs={"x": "MxN"}, outputs={"w": Tensor("MxN", dtype="int32")}, params={"k": 2},
           reference=lambda i, p: {"w": i["x"]},
           selection=Selection("w", scores=lambda i, p: i["x"], at=lambda i, p: {"w": i["x"]}, dense=True))
