"""PyTorch's own eager ops, checked as CallableKernels.

They show that any Python callable can be put under the battery (a third-party library's op is declared
the same way), and they run on a CPU-only machine. torch computes f16/bf16 softmax and norms in fp32
internally and rounds once, so they are declared with fp32 accumulation.
"""
import torch
import torch.nn.functional as F

from verifier.spec import FLOAT_IO, CallableKernel, dtypes


# Returning the result (rather than copying it into outputs) lets `verifier bench` time the op alone.
def _softmax(inputs, outputs, params, dt):
    return {"y": torch.softmax(inputs["x"], dim=-1)}


def _log_softmax(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.log_softmax(inputs["x"], dim=-1))


def _rms_norm(inputs, outputs, params, dt):
    x = inputs["x"]
    return {"y": F.rms_norm(x, (x.shape[-1],), inputs["w"], eps=params["eps"])}


def _layer_norm(inputs, outputs, params, dt):
    x = inputs["x"]
    return {"y": F.layer_norm(x, (x.shape[-1],), inputs["w"], inputs["b"], eps=params["eps"])}


def _fused_add_rms_norm(inputs, outputs, params, dt):
    # vLLM semantics: the sum is formed in fp32, stored rounded into residual; y normalizes the fp32 sum.
    r = inputs["x"].float() + inputs["residual"].float()
    outputs["residual"].copy_(r)
    y = F.rms_norm(r, (r.shape[-1],), inputs["w"].float(), eps=params["eps"])
    outputs["y"].copy_(y)


def _reduce_sum(inputs, outputs, params, dt):
    outputs["y"].copy_(inputs["x"].sum(dim=-1, dtype=torch.float32 if dt.acc == "float32" else None))


def _cross_entropy(inputs, outputs, params, dt):
    # fp32 logits (exact upcast), per-row loss; torch gives 0 at ignore_index whatever the logits hold.
    return {"loss": F.cross_entropy(inputs["x"].float(), inputs["labels"].long(), reduction="none",
                                    ignore_index=int(params["ignore_index"]))}


def _topk_softmax(inputs, outputs, params, dt):
    # vLLM's torch composition: gates in fp32 over all E, torch.topk (largest first), renormalized over the k.
    x = inputs["x"].float()
    g = torch.softmax(x, dim=-1) if params["gate"] == "softmax" else torch.sigmoid(x)
    values, indices = torch.topk(g, int(params["k"]), dim=-1)
    if params["renormalize"]:
        values = values / values.sum(dim=-1, keepdim=True)
    return {"values": values, "indices": indices.to(getattr(torch, params["index_dtype"]))}


def _merge_attn_states(inputs, outputs, params, dt):
    # vLLM's / FlashInfer's arithmetic in torch: weights from the lse difference to the max, in float32.
    la, lb = inputs["lse_a"].float(), inputs["lse_b"].float()
    m = torch.maximum(la, lb)
    exp = torch.exp if params["lse_base"] == "e" else torch.exp2
    wa, wb = exp(la - m), exp(lb - m)
    s = wa + wb
    v = inputs["x"].float() * (wa / s)[:, None] + inputs["v_b"].float() * (wb / s)[:, None]
    lse = m + (torch.log(s) if params["lse_base"] == "e" else torch.log2(s))
    return {"v": v.to(inputs["x"].dtype), "lse": lse}


def _head_dim(M, N, dt):
    # Attention heads are 64-512 wide; longer rows only cost the CPU suites time.
    return f"N={N} > 8192: not a head dimension" if N > 8192 else None


def _k_le_e(M, N, dt):
    # Routers have tens to a few thousand experts; longer rows only cost the CPU suites time.
    return f"E={N} < k=8: no top 8" if N < 8 else f"E={N} > 4096 experts" if N > 4096 else None
def _below_2pow32(M, N, dt):
    # Finding of this framework (torch 2.11+cu130 on an H200, docs/gpu-runs/2026-12-04-issue-36-large.md run 3):
    # F.rms_norm and F.layer_norm on CUDA give wrong rows (zeros) past element 2^32 of a plain contiguous tensor
    # (262208 x 16384 bf16: every row from 262144 on); caught by large_index_2pow32. Declared, not hidden.
    if M * N >= 2 ** 32:
        return "torch's CUDA rms_norm / layer_norm are wrong past element 2^32 (torch 2.11, measured)"
    return None


KERNELS = [
    CallableKernel(name="torch-softmax", op="softmax", fn=_softmax, dtypes=FLOAT_IO,
                   description="torch.softmax(x, dim=-1)"),
    # Finding of this framework (torch 2.13 CPU): for f16/bf16, log_softmax rounds the row's sum of
    # exponentials to the I/O dtype before the log — bf16 [-2.328, -0.2188] gives -0.1177 where the
    # answer is -0.1145 (7 ULP). Declared as what it is, 16-bit accumulation; tests/test_torch_findings.py
    # shows the fp32-accumulation claim is rejected.
    CallableKernel(name="torch-log-softmax", op="log_softmax", fn=_log_softmax,
                   dtypes=[dtypes("f32"), dtypes("f16", acc="f16"), dtypes("bf16", acc="bf16")],
                   description="torch.log_softmax(x, dim=-1); f16/bf16 round the row sum to the I/O dtype"),
    CallableKernel(name="torch-rms-norm", op="rmsnorm", fn=_rms_norm, dtypes=FLOAT_IO,
                   supports=_below_2pow32,
                   description="torch.nn.functional.rms_norm"),
    CallableKernel(name="torch-layer-norm", op="layernorm", fn=_layer_norm, dtypes=FLOAT_IO,
                   supports=_below_2pow32,
                   description="torch.nn.functional.layer_norm"),
    CallableKernel(name="torch-fused-add-rms-norm", op="fused_add_rmsnorm", fn=_fused_add_rms_norm, dtypes=FLOAT_IO,
                   supports=_below_2pow32,
                   description="fp32 x + residual, residual stored rounded, F.rms_norm on the fp32 sum"),
    CallableKernel(name="torch-reduce-sum", op="reduce_sum", fn=_reduce_sum, dtypes=[dtypes("f32")],
                   description="x.sum(dim=-1) in fp32"),
    CallableKernel(name="torch-cross-entropy", op="cross_entropy", fn=_cross_entropy,
                   dtypes=[dtypes(d.input, "f32") for d in FLOAT_IO],
                   description="F.cross_entropy(x.float(), labels, reduction='none'), int64 labels"),
    CallableKernel(name="torch-topk-softmax", op="topk_softmax", fn=_topk_softmax,
                   dtypes=[dtypes("f32"), dtypes("bf16", "f32")], supports=_k_le_e,
                   description="torch.softmax(x.float(), -1) then torch.topk(k=8): the unfused composition"),
    CallableKernel(name="torch-topk-softmax-renorm", op="topk_softmax", fn=_topk_softmax, dtypes=[dtypes("bf16", "f32")],
                   params={"renormalize": True}, supports=_k_le_e,
                   description="softmax, torch.topk(k=8), values / values.sum(-1)"),
    CallableKernel(name="torch-merge-attn-states", op="merge_attn_states", fn=_merge_attn_states,
                   dtypes=[dtypes("f32"), dtypes("bf16")], supports=_head_dim,
                   description="the merge in torch, float32 weights from exp(lse - max): the unfused composition"),
]
