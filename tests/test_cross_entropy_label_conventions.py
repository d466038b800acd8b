"""Cross entropy's label conventions (verifier/ops/ce_labels.py): ``ignore_index=None`` (a kernel with no ignore index:
Megatron's vocab-parallel loss) and ``smoothing_classes='others'`` (label smoothing spread over the N - 1 classes
other than the target: fairseq, Megatron, NeMo), each against a torch model of that convention; undeclared, the
same kernels fail."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import references
from verifier.errors import UsageError
from verifier.inputs.catalogue import catalogue
from verifier.judge import check_output
from verifier.ops import get_op
from verifier.spec import CallableKernel, dtypes

F32 = dtypes("f32")


def _inputs(M=8, N=500, seed=0, ignored=()):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((M, N)).astype(np.float32)
    labels = rng.integers(N, size=M)
    labels[list(ignored)] = -100
    return x, labels


def _others(x, labels, e, dtype=torch.float64):
    """fairseq's label_smoothed_nll_loss: the target keeps 1 - e, each other class e/(N - 1)."""
    lp = torch.log_softmax(torch.from_numpy(x).to(dtype), -1)
    lt = torch.from_numpy(labels.astype(np.int64))
    N = x.shape[1]
    nll = -lp.gather(1, lt[:, None])[:, 0]
    smooth = -lp.sum(-1)
    eps_i = e / (N - 1)
    return ((1 - e - eps_i) * nll + eps_i * smooth).numpy()


def _no_ignore(x, labels, dtype=torch.float32):
    """A loss with no ignore index: every row's lse - x[label], whatever the label (Megatron)."""
    xt = torch.from_numpy(x).to(dtype)
    lt = torch.from_numpy(labels.astype(np.int64))
    return (torch.logsumexp(xt, -1) - xt.gather(1, lt[:, None])[:, 0]).numpy()


def test_smoothing_over_the_other_classes_is_fairseqs_and_megatrons():
    x, labels = _inputs()
    p = {"label_smoothing": 0.1, "smoothing_classes": "others"}
    ref = references.reference("cross_entropy", {"x": x, "labels": labels}, p, "float64").exact["loss"]
    np.testing.assert_allclose(ref, _others(x, labels, 0.1), rtol=1e-12)
    got = _others(x, labels, 0.1, torch.float32)
    assert check_output("cross_entropy", {"x": x, "labels": labels}, got, F32, params=p).ok
    assert not check_output("cross_entropy", {"x": x, "labels": labels}, got, F32,
                            params={"label_smoothing": 0.1}).ok  # PyTorch's convention, not this one
    pt = F.cross_entropy(torch.from_numpy(x), torch.from_numpy(labels), reduction="none", label_smoothing=0.1).numpy()
    assert not check_output("cross_entropy", {"x": x, "labels": labels}, pt, F32, params=p).ok
    mean = references.reference("cross_entropy_reduced", {"x": x, "labels": labels},
                                {**p, "reduction": "mean"}, "float64").exact["loss"]
    np.testing.assert_allclose(mean, _others(x, labels, 0.1).mean(), rtol=1e-12)


def test_an_unknown_smoothing_convention_is_a_usage_error_with_a_fix():
    x, labels = _inputs()
    with pytest.raises(UsageError) as e:
        references.reference("cross_entropy", {"x": x, "labels": labels},
                             {"label_smoothing": 0.1, "smoothing_classes": "rest"}, "float32")
    assert "smoothing_classes" in e.value.message and "others" in e.value.fix


def test_no_ignore_index_draws_no_ignored_row_and_judges_every_row():
    params = {**get_op("cross_entropy").params, "ignore_index": None}
    for case in catalogue("cross_entropy", F32, "ci"):
        if case.name in ("ce_all_ignored", "ce_half_ignored", "normal_small", "m13_rows_not_mult_block"):
            xs = case.make(np.random.default_rng(0), F32, "cross_entropy", params)
            N = xs["x"].shape[1]
            assert ((xs["labels"] >= 0) & (xs["labels"] < N)).all(), case.name
    x, labels = _inputs(ignored=(1, 4))
    keep = labels != -100
    x, labels = x[keep], labels[keep]
    got = _no_ignore(x, labels)
    assert check_output("cross_entropy", {"x": x, "labels": labels}, got, F32, params={"ignore_index": None}).ok
    xi, li = _inputs(ignored=(1, 4))
    with pytest.raises(UsageError) as e:  # -100 is no class when there is no ignore index
        references.reference("cross_entropy", {"x": xi, "labels": li}, {"ignore_index": None}, "float32")
    assert "ignore_index" not in e.value.fix


def test_a_kernel_without_an_ignore_index_fails_undeclared():
    x, labels = _inputs(ignored=(1, 4))
    got = _no_ignore(x, np.where(labels == -100, 0, labels))  # it reads the padded label as a class
    assert not check_output("cross_entropy", {"x": x, "labels": labels}, got, F32).ok
    k = CallableKernel(name="no-ignore", op="cross_entropy", fn=lambda i, o, p, dt: None, dtypes=[F32],
                       params={"ignore_index": None, "smoothing_classes": "others", "label_smoothing": 0.1})
    assert k.op_params()["ignore_index"] is None and k.op_params()["smoothing_classes"] == "others"
