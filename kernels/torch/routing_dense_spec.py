"""The torch compositions of MoE routing's dense combine weights (op topk_softmax_dense): DeepSpeed's ``topkgating``
without token dropping (softmax gates, the top k by the logits, gates times the 0/1 mask, renormalized by their
clamped sum) and the GShard / Switch form that scatters the k plain gates into zeros. fp32 gates whatever the
logits' dtype."""
import torch

from verifier.spec import CallableKernel, dtypes


def _deepspeed(inputs, outputs, params, dt):
    logits = inputs["x"].float()
    gates = torch.softmax(logits, dim=-1)
    top_idx = torch.topk(logits, int(params["k"]), dim=-1).indices
    mask = torch.zeros_like(gates).scatter(-1, top_idx, 1.0)
    masked = gates * mask  # a NaN row stays NaN everywhere: its experts are free (docs/specs.md)
    return {"weights": masked / masked.sum(-1, keepdim=True).clamp(min=torch.finfo(torch.float32).eps)}


def _scatter(inputs, outputs, params, dt):
    gates = torch.softmax(inputs["x"].float(), dim=-1)
    values, idx = torch.topk(gates, int(params["k"]), dim=-1)
    return {"weights": torch.zeros_like(gates).scatter(-1, idx, values)}


KERNELS = [
    CallableKernel(name="torch-topk-dense-deepspeed", op="topk_softmax_dense", fn=_deepspeed, dtypes=[dtypes("f32")],
                   params={"k": 8, "renormalize": True},
                   description="DeepSpeed topkgating (drop_tokens=False): gates * topk mask / clamp(sum, eps)"),
    CallableKernel(name="torch-topk-dense-scatter", op="topk_softmax_dense", fn=_scatter,
                   dtypes=[dtypes("bf16", "f32")], params={"k": 8},
                   description="GShard / Switch: the k plain softmax gates scattered into zeros"),
]
