"""merge_attn_states without its lse output: vLLM's ``merge_attn_states(..., output_lse=None)`` writes only v. The op's
lse is an optional output written by default (its param ``lse`` defaults to True); a kernel declaring
``params={"lse": False}`` sees op ``merge_attn_states[-lse]``: v is judged with the same budget and the convex
invariant, the lse invariants (properties of an output it does not write) are not asked of it, and a kernel that
leaves lse unwritten without saying so is still an ``unwritten`` finding. Before, such a kernel could not be
declared: every launch was judged on an lse it never writes."""
from __future__ import annotations

import pytest
import torch

from verifier.battery import check_kernel
from verifier.errors import SpecError
from verifier.ops import get_op
from verifier.results.options import Options
from verifier.spec import CallableKernel, Op, Tensor, dtypes

QUICK = Options(level="quick", device="cpu")


def _merge(writes_lse: bool, unnormalized: bool = False):
    """A merge in float32 torch, as vLLM's kernel computes it; unnormalized: the weights are not divided by their
    sum (v leaves the segment between the two states)."""
    def fn(inputs, outputs, params, dt):
        la, lb = inputs["lse_a"], inputs["lse_b"]
        m = torch.maximum(la, lb)
        wa, wb = torch.exp(la - m), torch.exp(lb - m)
        s = wa + wb
        if unnormalized:
            s = torch.ones_like(s)
        v = inputs["x"].float() * (wa / s)[:, None] + inputs["v_b"].float() * (wb / s)[:, None]
        out = {"v": v.to(inputs["x"].dtype)}
        if writes_lse:
            out["lse"] = m + torch.log(s)
        return out
    return fn


def test_the_variant_leaves_lse_out_and_the_op_keeps_it_by_default():
    op = get_op("merge_attn_states")
    assert op.outputs == ("v", "lse") and op.params["lse"] is True
    assert op.variant({"lse": True}) is op and op.variant({}) is op
    v = op.variant({"lse": False})
    assert v.name == "merge_attn_states[-lse]" and v.outputs == ("v",) and "lse" not in v.row_outputs
    assert get_op("merge_attn_states[-lse]").outputs == ("v",)  # a child process finds it by name


def test_a_kernel_without_lse_passes_and_its_twin_is_caught():
    good = check_kernel(CallableKernel(name="merge-no-lse", op="merge_attn_states", fn=_merge(False),
                                       dtypes=[dtypes("f32"), dtypes("bf16")], params={"lse": False}), QUICK)
    assert good.error is None and good.verdict == "pass", [f.message for f in good.findings][:3]
    bad = check_kernel(CallableKernel(name="merge-no-lse-unnormalized", op="merge_attn_states",
                                      fn=_merge(False, unnormalized=True),
                                      dtypes=[dtypes("f32")], params={"lse": False}), QUICK)
    assert bad.verdict == "fail"
    checks = {f.check for f in bad.findings}
    assert "value" in checks and not any(f.message.startswith("lse:") or "lse_" in f.message for f in bad.findings)
    assert any("convex" in f.message for f in bad.findings if f.check == "invariant")


def test_lse_left_unwritten_without_the_declaration_is_still_a_finding():
    r = check_kernel(CallableKernel(name="merge-forgets-lse", op="merge_attn_states", fn=_merge(False),
                                    dtypes=[dtypes("f32")]), QUICK)
    assert r.verdict == "fail" and any(f.check == "unwritten" and "lse" in f.message for f in r.findings), \
        [(f.check, f.message) for f in r.findings][:3]


def test_an_optional_output_param_must_default_to_none_or_true():
    with pytest.raises(SpecError, match="default None .* or True"):
        Op("bad_default", inputs={"x": "MxN"}, outputs={"y": "MxN", "s": Tensor("M", optional=True)},
           params={"s": False}, reference=lambda i, p: {"y": i["x"], "s": i["x"].sum(-1)})


def test_a_param_neither_true_nor_false_is_a_spec_error_naming_false():
    with pytest.raises(SpecError) as e:
        CallableKernel(name="merge-lse-typo", op="merge_attn_states", fn=_merge(False), dtypes=[dtypes("f32")],
                       params={"lse": "no"})
    assert "lse=False" in e.value.fix
