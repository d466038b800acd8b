"""Declaring a torch MoE router as users write them (HF Mixtral / Qwen-MoE: float32 softmax, torch.topk, weights
cast back to the logits' dtype): rows with fewer experts than k are outside topk_softmax (torch.topk raises there),
so no kernel is asked them and no spec needs a supports() for it (before, such a router got `refusal` findings on
d1 and the 1x1 Hypothesis shape); and a spec giving the weights' dtype as the dtypes' output is told where the
outputs' dtypes come from (values_dtype), not only the table's combinations."""
import pytest
import torch
import torch.nn.functional as F

from verifier.battery import check_kernel
from verifier.errors import SpecError
from verifier.judge import tolerance
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes


def _router(inputs, outputs, params, dt):
    x = inputs["x"]
    w, idx = torch.topk(F.softmax(x, dim=1, dtype=torch.float), 2, dim=-1)
    return {"values": (w / w.sum(-1, keepdim=True)).to(x.dtype), "indices": idx}


def test_a_router_without_supports_passes_and_short_rows_are_refused_by_the_op():
    k = CallableKernel(name="mixtral-like", op="topk_softmax", fn=_router, dtypes=[dtypes("bf16", "f32")],
                       params={"k": 2, "renormalize": True, "index_dtype": "int64", "values_dtype": "bfloat16"})
    r = check_kernel(k, Options(level="quick", device="cpu"))
    assert r.error is None and r.verdict == "pass", [f.message for f in r.findings][:3]
    assert not any(f.check == "refusal" for f in r.findings)
    assert k.check_supported(4, 1, dtypes("bf16", "f32")) is not None  # E=1 < k=2: outside the op


def test_the_dtypes_output_mistake_names_values_dtype():
    with pytest.raises(SpecError) as e:
        tolerance.lookup("topk_softmax", "bfloat16", "float32", "precise")
    assert "values_dtype" in e.value.fix and "dtypes(<input>, 'f32')" in e.value.fix
