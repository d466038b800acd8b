"""The torch compositions of sampling's top-k filters (the baseline `verifier bench` puts beside the fused kernels),
as FlashInfer's tests and vLLM's samplers write them: the k-th largest by torch.topk, every element >= it kept
(ties='keep_all'), renormalized by the kept sum; and torch.topk's own k picks scattered back (exactly k kept, ties
cut as torch.topk cuts them: declared ties='exactly_k'). In fp32 whatever the I/O dtype."""
import torch

from verifier.spec import CallableKernel, dtypes

IO = (dtypes("f32"), dtypes("bf16"))


def _kept(x, k):
    if k >= x.shape[-1]:
        return torch.ones_like(x, dtype=torch.bool)
    return x >= torch.topk(x, k, dim=-1).values[:, -1:]


def _renorm(inputs, outputs, params, dt):
    x = inputs["x"].float()
    kept = torch.where(_kept(x, int(params["k"])), x, 0.0)
    s = kept.sum(-1, keepdim=True)
    s = s.clamp(min=float(params["sum_floor"])) if params["sum_floor"] else s  # FlashInfer's max(sum, 1e-8) if declared
    return {"renormed": (kept / s).to(inputs["x"].dtype)}


def _mask(inputs, outputs, params, dt):
    x = inputs["x"]
    return {"masked": torch.where(_kept(x.float(), int(params["k"])), x, float("-inf"))}


def _mask_topk_scatter(inputs, outputs, params, dt):
    x = inputs["x"]
    values, idx = torch.topk(x, min(int(params["k"]), x.shape[-1]), dim=-1)
    return {"masked": torch.full_like(x, float("-inf")).scatter(-1, idx, values)}


KERNELS = [
    CallableKernel(name="torch-top-k-renorm-probs", op="top_k_renorm_probs", fn=_renorm, dtypes=IO[:1],
                   description="kth = torch.topk(p, k).values[:, -1:]; kept = p * (p >= kth); kept / kept.sum(-1)"),
    CallableKernel(name="torch-top-k-mask-logits", op="top_k_mask_logits", fn=_mask, dtypes=IO[:1],
                   description="torch.where(x >= torch.topk(x, k).values[:, -1:], x, -inf)"),
    CallableKernel(name="torch-top-k-mask-logits-scatter", op="top_k_mask_logits", fn=_mask_topk_scatter,
                   dtypes=IO[1:], params={"ties": "exactly_k"},
                   description="torch.topk(x, k) scattered into -inf: exactly k kept (declared ties='exactly_k')"),
]
