"""The torch composition of each row's argmax (the baseline `verifier bench` puts beside the fused kernels), as
vLLM's and SGLang's greedy samplers write it: ``logits.argmax(dim=-1)`` (the first index of the maximum, NaN the
maximum), int64; and ``torch.max(logits, dim=-1)`` for a kernel that also writes the maximum."""
import torch

from verifier.spec import CallableKernel, dtypes


def _argmax(inputs, outputs, params, dt):
    return {"index": inputs["x"].argmax(dim=-1).to(getattr(torch, params["index_dtype"]))}


def _max(inputs, outputs, params, dt):
    value, index = torch.max(inputs["x"], dim=-1)
    return {"index": index.to(getattr(torch, params["index_dtype"])), "value": value}


KERNELS = [
    CallableKernel(name="torch-row-argmax", op="row_argmax", fn=_argmax, dtypes=[dtypes("f32")],
                   description="logits.argmax(dim=-1): the greedy token, int64"),
    CallableKernel(name="torch-row-argmax-max", op="row_argmax", fn=_max, dtypes=[dtypes("bf16")],
                   params={"index_dtype": "int32", "value": True},
                   description="torch.max(logits, dim=-1): the maximum and its index (int32)"),
]
