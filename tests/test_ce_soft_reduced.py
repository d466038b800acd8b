"""cross_entropy_soft_reduced: soft-label cross entropy over the batch (PyTorch's F.cross_entropy with probability
targets, reduction 'mean' / 'sum'; timm's SoftTargetCrossEntropy). Before it, such a kernel could not be declared:
cross_entropy_soft judges loss[M] and cross_entropy_reduced takes integer labels."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import references
from verifier.errors import UsageError
from verifier.judge import check_output
from verifier.ops import get_op
from verifier.spec import dtypes

F32 = dtypes("f32")


def _inputs(M=7, N=300, seed=0):
    rng = np.random.default_rng(seed)
    x = (3 * rng.standard_normal((M, N))).astype(np.float32)
    t = rng.random((M, N)) ** 3
    return {"x": x, "target": (t / t.sum(1, keepdims=True)).astype(np.float32)}


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reference_is_torch_cross_entropy_with_probability_targets(reduction):
    inp = _inputs()
    p = {**get_op("cross_entropy_soft_reduced").params, "reduction": reduction, "label_smoothing": 0.1}
    ref = references.reference("cross_entropy_soft_reduced", inp, p, "float64")
    want = F.cross_entropy(torch.from_numpy(inp["x"]).double(), torch.from_numpy(inp["target"]).double(),
                           reduction=reduction, label_smoothing=0.1)
    assert ref.exact["loss"].shape == (1,) and abs(ref.exact["loss"][0] - float(want)) < 1e-12 * abs(float(want))


def test_a_float32_mean_passes_and_a_mean_missing_a_row_fails():
    inp = _inputs()
    x, t = torch.from_numpy(inp["x"]), torch.from_numpy(inp["target"])
    rows = torch.sum(-t * F.log_softmax(x, -1), -1)
    assert check_output("cross_entropy_soft_reduced", inp, rows.mean().reshape(1).numpy(), F32).ok
    assert not check_output("cross_entropy_soft_reduced", inp, (rows[:6].sum() / 7).reshape(1).numpy(), F32).ok
    assert check_output("cross_entropy_soft_reduced", inp, rows.sum().reshape(1).numpy(), F32,
                        params={"reduction": "sum"}).ok


def test_an_unknown_reduction_names_the_per_row_op():
    with pytest.raises(UsageError, match="cross_entropy_soft, loss\\[M\\]"):
        references.reference("cross_entropy_soft_reduced", _inputs(),
                             {**get_op("cross_entropy_soft_reduced").params, "reduction": "none"}, "float32")
