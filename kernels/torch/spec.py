"""PyTorch's own eager ops, checked as CallableKernels.

They show that any Python callable can be put under the battery (a third-party library's op is declared
the same way), and they run on a CPU-only machine. torch computes f16/bf16 softmax and norms in fp32
internally and rounds once, so they are declared with fp32 accumulation.
"""
import torch
import torch.nn.functional as F

from torch_norm_limits import below_2pow32 as _below_2pow32
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
def _cross_entropy_variants(inputs, outputs, params, dt):
    # The unfused composition a training loop writes: cap the fp32 logits, F.cross_entropy with label smoothing,
    # z_loss as z·logsumexp² on the counted rows, then the batch's sum or mean over them (PyTorch's own reduction).
    x, labels, ign = inputs["x"].float(), inputs["labels"].long(), int(params["ignore_index"])
    cap, z = float(params["softcap"]), float(params["z_loss"])
    x = cap * torch.tanh(x / cap) if cap > 0 else x
    reduction = params.get("reduction", "none")
    if not z:
        loss = F.cross_entropy(x, labels, reduction=reduction, ignore_index=ign,
                               label_smoothing=float(params["label_smoothing"]))
        return {"loss": loss.reshape(-1)}
    counted = labels != ign
    z_term = torch.where(counted, z * torch.logsumexp(x, -1) ** 2, 0.0)  # not · counted: an ignored NaN row, NaN·0
    loss = F.cross_entropy(x, labels, reduction="none", ignore_index=ign,
                           label_smoothing=float(params["label_smoothing"])) + z_term
    if reduction != "none":
        loss = loss.sum().reshape(1)
        loss = loss / counted.sum() if reduction == "mean" else loss
    return {"loss": loss}


def _cross_entropy_soft_mean(inputs, outputs, params, dt):
    return {"loss": F.cross_entropy(inputs["x"].float(), inputs["target"].float()).reshape(1)}


def _cross_entropy_soft(inputs, outputs, params, dt):
    # PyTorch's class-probability targets: -(t'·log_softmax(x')).sum(-1), 0·(-inf) = NaN at a masked class
    # (declared zero_target='nan'); label smoothing mixes the target with the uniform one.
    x, cap, z = inputs["x"].float(), float(params["softcap"]), float(params["z_loss"])
    x = cap * torch.tanh(x / cap) if cap > 0 else x
    loss = F.cross_entropy(x, inputs["target"].float(), reduction="none",
                           label_smoothing=float(params["label_smoothing"]))
    return {"loss": loss + z * torch.logsumexp(x, -1) ** 2 if z else loss}


# issue #37, norm variants: the unfused torch compositions `verifier bench` times our kernels against (the CPU suite
# runs each in one or two dtypes: the same torch code for each; bench times the dtype asked with --dtype).
def _group_norm(inputs, outputs, params, dt):
    # In float32, as autocast runs group_norm: torch's CUDA group_norm on bf16 tensors stores the group mean and
    # rstd in bf16 and normalizes with them (up to 31,848 ULP off on mean >> std groups, 30 ULP on randn rows:
    # docs/gpu-runs/2026-12-05-issues-36-37.md, run 1); its CPU kernel keeps them in float32.
    x = inputs["x"]
    M, N = x.shape
    C = int(params["channels"])
    w, b = inputs.get("w"), inputs.get("b")
    y = F.group_norm(x.float().reshape(M, C, N // C), int(params["groups"]), None if w is None else w.float(),
                     None if b is None else b.float(), eps=params["eps"])
    return {"y": y.reshape(M, N).to(x.dtype)}


def _row_amax(inputs, outputs, params, dt):
    return {"y": inputs["x"].abs().amax(dim=-1)}


def _row_mean(inputs, outputs, params, dt):
    return {"y": inputs["x"].float().mean(dim=-1).to(inputs["x"].dtype)}


def _var_mean(inputs, outputs, params, dt):
    var, mean = torch.var_mean(inputs["x"].float(), dim=-1, correction=int(params["correction"]))
    return {"var": var.to(inputs["x"].dtype), "mean": mean.to(inputs["x"].dtype)}


def _l2norm(inputs, outputs, params, dt):
    # In fp32: F.normalize on f16 clamps at eps = 1e-12 rounded to f16, which is 0, so a zero row gives 0/0 = NaN.
    return {"y": F.normalize(inputs["x"].float(), p=2.0, dim=-1, eps=params["eps"]).to(inputs["x"].dtype)}


def _rms_norm_noweight(inputs, outputs, params, dt):
    x = inputs["x"]
    return {"y": F.rms_norm(x, (x.shape[-1],), None, eps=params["eps"])}


def _layer_norm_weightless(inputs, outputs, params, dt):
    x = inputs["x"]
    return {"y": F.layer_norm(x, (x.shape[-1],), None, inputs.get("b"), eps=params["eps"])}


# groups over the hidden dim (verifier/ops/group_hidden.py): x viewed as (M, G, N/G), each group normalized by torch,
# then the weight (and bias) per column: the unfused composition the Triton group_hidden kernels are benched beside.
def _group_rms_norm(inputs, outputs, params, dt):
    x, G = inputs["x"], int(params["groups"])
    M, N = x.shape
    return {"y": F.rms_norm(x.view(M, G, N // G), (N // G,), None, eps=params["eps"]).view(M, N) * inputs["w"]}


def _group_layer_norm(inputs, outputs, params, dt):
    x, G = inputs["x"], int(params["groups"])
    M, N = x.shape
    y = F.layer_norm(x.view(M, G, N // G), (N // G,), None, None, eps=params["eps"]).view(M, N) * inputs["w"]
    return {"y": y + inputs["b"] if "b" in inputs else y}


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
    # cross entropy variants (docs/specs.md): the unfused torch composition the fused kernels are benched beside
    # (one dtype each, as the Triton kernels they are benched beside: the CPU suite's time)
    *(CallableKernel(name=f"torch-ce-{tag}", op=op, fn=_cross_entropy_variants, params=p, dtypes=[dtypes(*dt)],
                     description=what)
      for tag, op, p, dt, what in (
          ("variants", "cross_entropy", {"label_smoothing": 0.1, "z_loss": 1e-4, "softcap": 30.0}, ("bf16", "f32"),
           "30·tanh(x/30), F.cross_entropy(label_smoothing=0.1) + 1e-4·logsumexp² per row"),
          ("mean", "cross_entropy_reduced", {"reduction": "mean", "label_smoothing": 0.1}, ("bf16", "f32"),
           "F.cross_entropy(x.float(), labels, reduction='mean', label_smoothing=0.1)"),
          ("sum", "cross_entropy_reduced", {"reduction": "sum", "z_loss": 1e-4, "softcap": 30.0}, ("f32",),
           "30·tanh(x/30), F.cross_entropy + 1e-4·logsumexp², summed over the rows"))),
    CallableKernel(name="torch-ce-soft-mean", op="cross_entropy_soft_reduced", fn=_cross_entropy_soft_mean,
                   dtypes=[dtypes("bf16", "f32"), dtypes("f32")], params={"zero_target": "nan"},
                   description="F.cross_entropy(x.float(), target.float()): soft labels, the mean over the batch "
                               "(timm's SoftTargetCrossEntropy under autocast)"),
    CallableKernel(name="torch-ce-soft", op="cross_entropy_soft", fn=_cross_entropy_soft,
                   dtypes=[dtypes("bf16", "f32")], params={"label_smoothing": 0.1, "zero_target": "nan"},
                   description="F.cross_entropy(x.float(), target.float(), label_smoothing=0.1), soft labels"),
    # issue #37, norm variants
    CallableKernel(name="torch-group-norm", op="group_norm", fn=_group_norm, dtypes=[dtypes("f32"), dtypes("bf16")],
                   description="F.group_norm in float32 on x viewed as (M, C, N/C), per-channel w, b"),
    CallableKernel(name="torch-group-norm-noaffine", op="group_norm_noaffine", fn=_group_norm, dtypes=[dtypes("f32")],
                   description="F.group_norm in float32 on x viewed as (M, C, N/C), no affine"),
    CallableKernel(name="torch-row-amax", op="row_amax", fn=_row_amax, dtypes=[dtypes("f32")],
                   description="x.abs().amax(dim=-1)"),
    CallableKernel(name="torch-row-mean", op="row_mean", fn=_row_mean, dtypes=[dtypes("f32")],
                   description="x.float().mean(dim=-1), rounded to the I/O dtype"),
    CallableKernel(name="torch-var-mean", op="var_mean", fn=_var_mean, dtypes=[dtypes("f32"), dtypes("f16")],
                   description="torch.var_mean(x.float(), dim=-1), rounded to the I/O dtype"),
    CallableKernel(name="torch-l2norm", op="l2norm", fn=_l2norm, dtypes=[dtypes("f32")],
                   description="F.normalize(x.float(), p=2, dim=-1, eps), rounded to the I/O dtype"),
    CallableKernel(name="torch-rms-norm-noweight", op="rmsnorm_noweight", fn=_rms_norm_noweight,
                   dtypes=[dtypes("f32")], supports=_below_2pow32, description="F.rms_norm(x, (N,), None, eps)"),
    CallableKernel(name="torch-layer-norm-noweight", op="layernorm_noweight", fn=_layer_norm_weightless,
                   dtypes=[dtypes("f32")], supports=_below_2pow32, description="F.layer_norm(x, (N,), None, None, eps)"),
    CallableKernel(name="torch-layer-norm-bias", op="layernorm_bias", fn=_layer_norm_weightless,
                   dtypes=[dtypes("f32")], supports=_below_2pow32, description="F.layer_norm(x, (N,), None, b, eps)"),
    # groups over the hidden dim: the dtypes and params of the Triton kernels they are benched beside
    # (kernels/triton/group_hidden_spec.py). In bf16 F.rms_norm rounds the normalized x to bf16 before the weight
    # multiply, a second rounding at the output (as liger-rmsnorm's llama mode: docs/tolerances.md, base_ulps 2)
    CallableKernel(name="torch-group-rms-norm", op="group_rmsnorm", fn=_group_rms_norm,
                   dtypes=[dtypes("f32"), dtypes("bf16")], tolerance={"base_ulps": 2},
                   supports=_below_2pow32,
                   description="F.rms_norm on x.view(M, G, N/G), times w per column"),
    CallableKernel(name="torch-group-layer-norm", op="group_layernorm", fn=_group_layer_norm, dtypes=[dtypes("f32")],
                   supports=_below_2pow32,
                   description="F.layer_norm on x.view(M, G, N/G), times w per column"),
    CallableKernel(name="torch-group-layer-norm-bias", op="group_layernorm", fn=_group_layer_norm,
                   dtypes=[dtypes("f32")], params={"groups": 3, "b": True},
                   supports=_below_2pow32,
                   description="F.layer_norm on x.view(M, 3, N/3), times w plus b per column"),
]
