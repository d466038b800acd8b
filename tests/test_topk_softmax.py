"""topk_softmax (MoE routing) and its tie-aware comparison (verifier.judge.selection): a right choice with
another tie-break passes, a wrong pick outside the kernel's error band is a finding naming row, expert, gate and
the k-th largest; range, duplicates and order; the values at the kernel's own picks; the op's invariants and cases;
the routing kernels and their defect twins on CPU (the Triton interpreter)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from verifier.judge import Criteria, judge
from verifier.ops import get_op
from verifier.spec import dtypes

REPO = Path(__file__).resolve().parents[1]
OP = get_op("topk_softmax")


def _crit(dt=dtypes("f32"), **params):
    return Criteria(op="topk_softmax", dtypes=dt, params={**OP.params, **params})


def _route(x, k=8, renormalize=False, gate="softmax", high_ties=False, index_dtype=np.int32):
    """A correct routing in float32 (the torch composition), ties to the smaller index or, with high_ties, to the
    larger one (a stable sort of the reversed row)."""
    t = torch.as_tensor(np.asarray(x, dtype=np.float32))
    g = (torch.softmax(t, -1) if gate == "softmax" else torch.sigmoid(t)).numpy()
    if high_ties:
        rev = g[:, ::-1]
        idx = g.shape[1] - 1 - np.argsort(-rev, axis=1, kind="stable")[:, :k]
    else:
        idx = np.argsort(-g, axis=1, kind="stable")[:, :k]
    v = np.take_along_axis(g, idx, 1)
    if renormalize:
        v = v / v.sum(axis=1, keepdims=True)
    return {"values": v.astype(np.float32), "indices": idx.astype(index_dtype)}


def _ties(M=6, E=64, seed=0):
    return (np.random.default_rng(seed).integers(0, 4, size=(M, E)) * 0.5).astype(np.float32)


def _findings(verdict):
    return {f.message.split(":")[0]: f for f in verdict.comparison.findings()}


def test_opposite_tie_break_passes_where_an_exact_index_compare_would_fail():
    x = _ties()
    low, high = _route(x), _route(x, high_ties=True)
    assert (low["indices"] != high["indices"]).any()  # the control really differs from the reference's choice
    ref = torch.topk(torch.softmax(torch.as_tensor(x, dtype=torch.float64), -1), 8).indices.numpy()
    assert (high["indices"] != ref).any()
    for out in (low, high):
        verdict = judge(_crit(), {"x": x}, out)
        assert verdict.ok, verdict.comparison.message()


def test_wrong_pick_outside_the_band_names_row_expert_gate_and_kth():
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    out = _route(x)
    smallest = int(np.argmin(x[2]))
    out["indices"][2, 5] = smallest
    out["values"][2, 5] = torch.softmax(torch.as_tensor(x[2]), -1)[smallest].item()
    verdict = judge(_crit(), {"x": x}, out)
    assert not verdict.ok
    f = _findings(verdict)["indices"]
    assert f.check == "value"
    assert f"row 2, position 5: expert {smallest} with gate" in f.message
    assert "is not in the top k: the exact k-th largest gate is" in f.message
    assert "values" not in _findings(verdict)  # the values are right at the picks the kernel made


def test_picks_out_of_range_duplicated_or_ascending_are_wrong():
    x = np.random.default_rng(2).standard_normal((3, 32)).astype(np.float32)
    out = _route(x)
    out["indices"][0, 1] = 32
    out["indices"][1, 3] = out["indices"][1, 0]
    out["indices"][2], out["values"][2] = out["indices"][2][::-1].copy(), out["values"][2][::-1].copy()
    verdict = judge(_crit(), {"x": x}, out)
    msg = verdict.comparison["indices"].message()
    assert "row 0, position 1: index 32 is outside [0, 32)" in msg
    assert f"row 1, position 3: expert {out['indices'][1, 0]} picked twice" in msg
    assert "row 2, position 1" in msg and "comes after a smaller gate" in msg
    assert any(v.invariant == "topk_softmax.sorted" for v in verdict.violations)


def test_values_are_judged_at_the_kernels_picks_renormalized_over_them():
    x = _ties(seed=3)
    high = _route(x, renormalize=True, high_ties=True)
    assert judge(_crit(renormalize=True), {"x": x}, high).ok
    over_e = _route(x)  # divided by the sum of all E gates: 1
    verdict = judge(_crit(renormalize=True), {"x": x}, over_e)
    assert "values" in _findings(verdict)
    assert any(v.invariant == "topk_softmax.unit_sum" for v in verdict.violations)


def test_one_ulp_apart_is_a_tie_in_float32_and_not_in_bfloat16():
    import ml_dtypes

    E = 16
    steps = 1.0 + np.arange(E) * 2.0 ** -23
    x = np.tile(steps, (2, 1)).astype(np.float32)
    out = _route(x)
    # swap the k-th and (k+1)-th largest: one float32 ULP apart, inside the kernel's error band
    kth, nxt = E - 8, E - 9
    out["indices"][0, 7] = nxt
    assert judge(_crit(), {"x": x}, out).ok
    xb = np.tile(1.0 + np.arange(E) * 2.0 ** -7, (2, 1)).astype(ml_dtypes.bfloat16)
    outb = _route(xb.astype(np.float32))
    outb["indices"][0, 7] = nxt
    outb["values"][0, 7] = torch.softmax(torch.as_tensor(xb.astype(np.float32)[0]), -1)[nxt].item()
    verdict = judge(_crit(dtypes("bf16", "f32")), {"x": xb}, outb)
    assert not verdict.ok and f"expert {nxt}" in _findings(verdict)["indices"].message
    assert kth != nxt


def test_neg_inf_gates_and_nan_rows_leave_the_choice_free():
    x = np.full((2, 16), -np.inf, dtype=np.float32)
    x[0, 3] = 1.0  # one finite gate: 1, then seven gates of 0 (any seven)
    x[1] = np.random.default_rng(4).standard_normal(16)
    x[1, 5] = np.nan
    out = _route(x)
    out["indices"][0, 1:] = np.arange(15, 8, -1)
    out["indices"][1] = np.arange(8)[::-1]
    verdict = judge(_crit(), {"x": x}, out)
    assert verdict.comparison["indices"].values_ok, verdict.comparison.message()


def test_sigmoid_gate_and_int64_indices():
    x = np.random.default_rng(5).standard_normal((4, 40)).astype(np.float32)
    out = _route(x, k=4, gate="sigmoid", renormalize=True, index_dtype=np.int64)
    assert judge(_crit(k=4, gate="sigmoid", renormalize=True, index_dtype="int64"), {"x": x}, out).ok
    assert OP.output_dtype("indices", dtypes("f32"), {"index_dtype": "int64"}) == "int64"
    assert OP.output_dtype("indices", dtypes("f32")) == "int32"


def test_op_declares_its_cases_and_rejects_bad_params():
    names = {c.name for c in OP.cases}
    assert {"topk_exact_ties", "topk_e60", "topk_e257", "topk_e8_k_equals_e", "topk_neg_inf_gates",
            "topk_all_equal", "topk_one_ulp_ladder"} <= names
    from verifier.errors import SpecError

    x = np.zeros((1, 4), dtype=np.float32)
    with pytest.raises(SpecError, match="k=8 with E=4"):
        judge(_crit(), {"x": x}, {"values": np.zeros((1, 8), np.float32), "indices": np.zeros((1, 8), np.int32)})


def test_selection_must_name_an_integer_output():
    from verifier.errors import SpecError
    from verifier.spec import Op, Selection, Tensor

    with pytest.raises(SpecError, match="no integer dtype"):
        Op("bad_topk", inputs={"x": "MxN"}, outputs={"v": Tensor("Mxk", dtype="float32"), "i": "Mxk"},
           params={"k": 2}, reference=lambda i, p: {}, selection=Selection("i", scores=lambda i, p: i["x"],
                                                                          at=lambda i, p: {}))


def _check(spec_path, name, case, dtype):
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    spec = {k.name: k for k in load_spec_file(spec_path)}[name]
    return check_kernel(spec, Options(case=case, level="ci", device="cpu", dtype=dtype))


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_high_tie_break_kernel_passes_and_twins_are_caught_with_their_message():
    defects = REPO / "kernels" / "defects" / "triton" / "defects.py"
    ok = _check(defects, "triton-topk-softmax-high-ties", "topk_exact_ties", "bf16tof32")
    assert ok.verdict == "pass", [f.message for f in ok.findings]
    tail = [f.message for f in _check(defects, "defect-triton-topk-tail-lost", "topk_e60", "f32").findings]
    assert any("picks wrong (tie-aware)" in m and "is not in the top k" in m for m in tail), tail
    renorm = [f.message for f in _check(defects, "defect-triton-topk-renorm-over-e", "normal_small",
                                        "bf16tof32").findings]
    assert any(m.startswith("topk_softmax.unit_sum") for m in renorm), renorm
