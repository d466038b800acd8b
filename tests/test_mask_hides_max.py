"""The case sm_mask_hides_max (softmax family, kernels taking a mask): each row's largest logit, 200 above the rest,
masked. A kernel taking the row max before adding the mask (DeepSpeed's Triton masked_softmax_kernel: x - max(x) +
mask) underflows every live exp there and gives 0/0 = NaN; sm_huge_logits showed it only where the random mask
happened to hide a row's max (DeepSpeed's per-row mask passed in float32). Our own minimal callables."""
from __future__ import annotations

import torch

from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

F32 = dtypes("f32")
CASE = Options(level="ci", device="cpu", case="sm_mask_hides_max")


def _softmax(max_first: bool):
    def fn(inputs, outputs, params, dt):
        x, m = inputs["x"].float(), inputs["mask"].float()
        z = (x - x.amax(-1, keepdim=True)) + m if max_first else x + m
        z = z - z.amax(-1, keepdim=True) if not max_first else z
        return {"y": torch.exp(z) / torch.exp(z).sum(-1, keepdim=True)}
    return fn


def test_a_max_taken_before_the_mask_fails_and_the_right_order_passes():
    for mask in ("MxN", "N"):
        p = {"mask": mask, "masked_rows": "nan"}
        bad = check_kernel(CallableKernel(name="sm-max-first", op="softmax", fn=_softmax(True), dtypes=[F32],
                                          params=p), CASE)
        assert bad.verdict == "fail" and any(f.input == "sm_mask_hides_max" for f in bad.findings), mask
        good = check_kernel(CallableKernel(name="sm-mask-first", op="softmax", fn=_softmax(False), dtypes=[F32],
                                           params=p), CASE)
        assert good.verdict == "pass", (mask, [f.message for f in good.findings])
