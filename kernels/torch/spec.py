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


# issue #37, norm variants: the unfused torch compositions `verifier bench` times our kernels against (the CPU suite
# runs each in one or two dtypes: the same torch code for each; bench times the dtype asked with --dtype).
def _group_norm(inputs, outputs, params, dt):
    x = inputs["x"]
    M, N = x.shape
    C = int(params["channels"])
    y = F.group_norm(x.reshape(M, C, N // C), int(params["groups"]), inputs.get("w"), inputs.get("b"),
                     eps=params["eps"])
    return {"y": y.reshape(M, N)}


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
                   description="torch.nn.functional.rms_norm"),
    CallableKernel(name="torch-layer-norm", op="layernorm", fn=_layer_norm, dtypes=FLOAT_IO,
                   description="torch.nn.functional.layer_norm"),
    CallableKernel(name="torch-fused-add-rms-norm", op="fused_add_rmsnorm", fn=_fused_add_rms_norm, dtypes=FLOAT_IO,
                   description="fp32 x + residual, residual stored rounded, F.rms_norm on the fp32 sum"),
    CallableKernel(name="torch-reduce-sum", op="reduce_sum", fn=_reduce_sum, dtypes=[dtypes("f32")],
                   description="x.sum(dim=-1) in fp32"),
    CallableKernel(name="torch-cross-entropy", op="cross_entropy", fn=_cross_entropy,
                   dtypes=[dtypes(d.input, "f32") for d in FLOAT_IO],
                   description="F.cross_entropy(x.float(), labels, reduction='none'), int64 labels"),
    # issue #37, norm variants
    CallableKernel(name="torch-group-norm", op="group_norm", fn=_group_norm, dtypes=[dtypes("f32"), dtypes("bf16")],
                   description="F.group_norm on x viewed as (M, C, N/C), per-channel w, b"),
    CallableKernel(name="torch-group-norm-noaffine", op="group_norm_noaffine", fn=_group_norm, dtypes=[dtypes("f32")],
                   description="F.group_norm on x viewed as (M, C, N/C), no affine"),
    CallableKernel(name="torch-row-amax", op="row_amax", fn=_row_amax, dtypes=[dtypes("f32")],
                   description="x.abs().amax(dim=-1)"),
    CallableKernel(name="torch-row-mean", op="row_mean", fn=_row_mean, dtypes=[dtypes("f32")],
                   description="x.float().mean(dim=-1), rounded to the I/O dtype"),
    CallableKernel(name="torch-var-mean", op="var_mean", fn=_var_mean, dtypes=[dtypes("f32"), dtypes("f16")],
                   description="torch.var_mean(x.float(), dim=-1), rounded to the I/O dtype"),
    CallableKernel(name="torch-l2norm", op="l2norm", fn=_l2norm, dtypes=[dtypes("f32")],
                   description="F.normalize(x.float(), p=2, dim=-1, eps), rounded to the I/O dtype"),
    CallableKernel(name="torch-rms-norm-noweight", op="rmsnorm_noweight", fn=_rms_norm_noweight,
                   dtypes=[dtypes("f32")], description="F.rms_norm(x, (N,), None, eps)"),
    CallableKernel(name="torch-layer-norm-noweight", op="layernorm_noweight", fn=_layer_norm_weightless,
                   dtypes=[dtypes("f32")], description="F.layer_norm(x, (N,), None, None, eps)"),
    CallableKernel(name="torch-layer-norm-bias", op="layernorm_bias", fn=_layer_norm_weightless,
                   dtypes=[dtypes("f32")], description="F.layer_norm(x, (N,), None, b, eps)"),
]
