"""merge_attn_states: the reference's semantics (either side empty, both empty under each declared contract, base
e and 2), the derived budget rejecting a wrong base and a missing max subtraction, the invariants, the op's cases,
and the Triton defect twins caught with their message (CPU, the Triton interpreter)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from verifier.judge import Criteria, judge
from verifier.ops import get_op
from verifier.spec import dtypes

REPO = Path(__file__).resolve().parents[1]
OP = get_op("merge_attn_states")


def _inputs(M=6, N=64, seed=0, la=None, lb=None):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((M, N)).astype(np.float32),
            "lse_a": (5 + 3 * rng.standard_normal(M) if la is None else np.asarray(la, float)).astype(np.float32),
            "v_b": rng.standard_normal((M, N)).astype(np.float32),
            "lse_b": (5 + 3 * rng.standard_normal(M) if lb is None else np.asarray(lb, float)).astype(np.float32)}


def _merge(inp, base="e", empty="nan", max_sub=True, exp_base=None):
    """The merge in float32 numpy, as a kernel computes it."""
    la, lb = inp["lse_a"].astype(np.float32), inp["lse_b"].astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = np.maximum(la, lb) if max_sub else np.float32(0)
        pw = np.exp if (exp_base or base) == "e" else np.exp2
        wa, wb = pw(la - m).astype(np.float32), pw(lb - m).astype(np.float32)
        s = wa + wb
        v = inp["x"] * (wa / s)[:, None] + inp["v_b"] * (wb / s)[:, None]
        lse = (m + (np.log(s) if base == "e" else np.log2(s))).astype(np.float32)
    if empty == "zero":
        e = np.maximum(la, lb) == -np.inf
        v = np.where(e[:, None], 0, v)
        lse = np.where(e, -np.inf, lse)
    return {"v": v.astype(np.float32), "lse": lse.astype(np.float32)}


def _crit(**params):
    return Criteria(op="merge_attn_states", dtypes=dtypes("f32"), params={**OP.params, **params})


def _msgs(verdict):
    return [f.message for f in verdict.comparison.findings()] + [v.invariant for v in verdict.violations]


@pytest.mark.parametrize("base", ["e", "2"])
def test_a_right_merge_passes_and_an_empty_side_passes_the_other_through(base):
    inp = _inputs(la=[1.0, -np.inf, 3.0, 100.0, -np.inf, 7.0], lb=[2.0, 4.0, -np.inf, -900.0, -np.inf, 7.0])
    for empty in ("nan", "zero"):
        out = _merge(inp, base, empty)
        verdict = judge(_crit(lse_base=base, empty=empty), inp, out)
        assert verdict.ok, verdict.comparison.message()
    assert np.array_equal(out["v"][1], inp["v_b"][1]) and out["lse"][1] == inp["lse_b"][1]
    nan = _merge(inp, base, "nan")
    assert np.isnan(nan["v"][4]).all() and np.isnan(nan["lse"][4])
    zero = _merge(inp, base, "zero")
    assert (zero["v"][4] == 0).all() and zero["lse"][4] == -np.inf


def test_the_other_contract_on_two_empty_states_is_a_nan_inf_finding():
    inp = _inputs(la=[1.0, -np.inf] * 3, lb=[2.0, -np.inf] * 3)
    verdict = judge(_crit(empty="zero"), inp, _merge(inp, empty="nan"))
    assert any(m.startswith("v:") and "NaN where the reference is a number" in m for m in _msgs(verdict))
    verdict = judge(_crit(empty="nan"), inp, _merge(inp, empty="zero"))
    assert not verdict.ok


def test_a_mixed_base_and_a_missing_max_subtraction_are_caught():
    inp = _inputs()
    verdict = judge(_crit(lse_base="2"), inp, _merge(inp, base="2", exp_base="e"))
    assert any(m.startswith("v:") and "over their ULP budget" in m for m in _msgs(verdict))
    big = _inputs(la=200 + np.arange(6), lb=198 - np.arange(6))
    verdict = judge(_crit(), big, _merge(big, max_sub=False))
    assert not verdict.ok and any("NaN" in m for m in _msgs(verdict))
    assert judge(_crit(), big, _merge(big)).ok


def test_invariants_lse_at_least_the_max_and_v_between_the_sides():
    inp = _inputs()
    out = _merge(inp)
    out["lse"] = out["lse"] - 0.01
    verdict = judge(_crit(), inp, out)
    assert "merge_attn_states.lse_lower" in _msgs(verdict)
    out = _merge(inp)
    out["v"] = out["v"] * 1.5
    assert "merge_attn_states.convex" in _msgs(judge(_crit(), inp, out))


def test_op_declares_its_cases_and_rejects_an_unknown_base():
    names = {c.name for c in OP.cases}
    assert {"merge_neg_inf_a", "merge_neg_inf_b", "merge_both_neg_inf", "merge_large_diff", "merge_big_lse"} <= names
    from verifier.errors import SpecError

    with pytest.raises(SpecError, match="lse_base='10'"):
        judge(_crit(lse_base="10"), _inputs(), _merge(_inputs()))


def _check(name, case, dtype):
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.launch import triton as runner
    from verifier.results.options import Options

    if runner._active == "compiled":
        pytest.skip("interpreter tests need their own process: run pytest -m interpreter")
    runner.activate("interpreter")  # before the spec file imports triton (a worker running this file alone)

    spec = {k.name: k for k in load_spec_file(REPO / "kernels" / "defects" / "triton" / "defects.py")}[name]
    return [f.message for f in check_kernel(spec, Options(case=case, level="ci", device="cpu", dtype=dtype)).findings]


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_merge_twins_are_caught_with_their_message():
    mixed = _check("defect-triton-merge-mixed-base", "normal_small", "bf16")
    assert any(m.startswith("v:") and "over their ULP budget" in m for m in mixed), mixed
    empty = _check("defect-triton-merge-unguarded-empty", "merge_both_neg_inf", "bf16")
    assert any(m.startswith("v:") and "NaN where the reference is a number" in m for m in empty), empty


def test_the_first_partial_output_answers_to_v_a_as_well_as_x():
    """The issue names merge_attn_states' inputs v_a, lse_a, v_b, lse_b: a user's callable may read inputs['v_a']
    and a CUDA launch may pass 'v_a' and its stride, though the op calls the tensor x (Op.other_names)."""
    import torch

    from verifier.battery import check_kernel
    from verifier.launch.cuda import bind_model, model_tensors, strided_tensors
    from verifier.results.options import Options
    from verifier.errors import SpecError
    from verifier.spec import CallableKernel, CudaKernel, Launch, Op, Stride, dtypes

    def merge(inputs, outputs, params, dt):
        la, lb = inputs["lse_a"], inputs["lse_b"]
        m = torch.maximum(la, lb)
        wa, wb = torch.exp(la - m), torch.exp(lb - m)
        s = wa + wb
        v = inputs["v_a"].float() * (wa / s)[:, None] + inputs["v_b"].float() * (wb / s)[:, None]
        return {"v": v.to(inputs["v_a"].dtype), "lse": m + torch.log(s)}

    k = CallableKernel(name="merge-v_a", op="merge_attn_states", fn=merge, dtypes=[dtypes("f32")])
    report = check_kernel(k, Options(level="quick", device="cpu"))
    assert report.error is None and not report.findings, [f.message for f in report.findings][:3]

    args = ("v_a", "lse_a", "v_b", "lse_b", "v", "lse", "M", "N", Stride("v_a", "int64"))
    cu = CudaKernel(name="merge-cu-v_a", op="merge_attn_states", source="merge_states.cu", dtypes=[dtypes("f32")],
                    launches=lambda M, N, dt, p: [Launch("merge_f32", grid=(M,), block=(32,), args=args)])
    F32 = dtypes("f32")
    assert strided_tensors(cu, 4, 64, F32, {}) == {"x"}  # the stride of v_a is x's: the strided case pads x
    tensors = model_tensors(cu, 4, 64, F32, {"lse_base": "e", "empty": "nan"}, kind="strided")
    bound = bind_model(cu, Launch("merge_f32", grid=(4,), block=(32,), args=args), 4, 64, F32, {}, tensors)
    assert int(bound[0]) == tensors["x"].address and int(bound[-1]) == 64 + 64  # x's pointer and padded stride

    with pytest.raises(SpecError):
        Op("bad_names", inputs={"x": "MxN"}, outputs={"y": "MxN"}, reference=lambda i, p: {"y": i["x"]},
           other_names={"y": "x"})  # a tensor's own name


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_a_nan_lse_beside_an_empty_state_propagates_not_read_as_both_empty():
    """torch.maximum (the reference's m) keeps a NaN lse: a max that drops it (fmaxf, tl.maximum's default, as the
    interpreter does too) turns (NaN, -inf) into m = -inf, which the guarded kernel reads as both empty (v = 0)."""
    import torch

    from verifier.declare.registry import load_spec_file
    from verifier.launch import triton as runner

    if runner._active == "compiled":
        pytest.skip("interpreter tests need their own process: run pytest -m interpreter")
    runner.activate("interpreter")
    spec = {k.name: k for k in load_spec_file(REPO / "kernels" / "triton" / "merge_states_spec.py")}[
        "triton-merge-attn-states-base2-zero"]
    inp = _inputs(M=4, N=16, la=[np.nan, -np.inf, 1.0, -np.inf], lb=[-np.inf, np.nan, 2.0, -np.inf])
    ins = {k: torch.from_numpy(v).to(torch.bfloat16 if v.ndim == 2 else torch.float32) for k, v in inp.items()}
    outs = {"v": torch.zeros(4, 16, dtype=torch.bfloat16), "lse": torch.zeros(4)}
    with np.errstate(all="ignore"):
        runner.run_triton(spec, ins, outs, {}, dtypes("bf16"), "cpu", mode="interpreter")
    want = OP.reference({k: torch.from_numpy(v).double() for k, v in inp.items()}, spec.op_params())
    assert torch.isnan(want["v"][:2]).all() and torch.isnan(want["lse"][:2]).all()  # the semantics pinned
    assert torch.isnan(outs["v"][:2].float()).all() and torch.isnan(outs["lse"][:2]).all()
    assert torch.isfinite(outs["v"][2].float()).all() and (outs["v"][3] == 0).all() and outs["lse"][3] == -np.inf
