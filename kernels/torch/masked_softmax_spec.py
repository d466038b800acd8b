"""The unfused PyTorch composition of softmax with attention's score transforms, as a model's eager code writes it:
every step its own op over the whole (M, N) tensor in fp32. One kernel per configuration of the CUDA and Triton
masked softmax specs (the same params, so `verifier bench` puts them side by side); a fully masked row is NaN here
(torch.softmax of a row of -inf), declared masked_rows='nan'."""
import torch

from verifier.spec import FLOAT_IO, CallableKernel, dtypes


def _masked_softmax(inputs, outputs, params, dt):
    x = inputs["x"]
    M, N = x.shape
    z = x.float() * params["scale"]
    if params["softcap"]:
        z = params["softcap"] * torch.tanh(z / params["softcap"])
    rows = torch.arange(M, device=x.device)
    q = rows % params["q_len"] if params["q_len"] else rows
    i = (q + params["causal_offset"])[:, None]
    j = torch.arange(N, device=x.device)[None, :]
    if "alibi_slopes" in inputs:
        z = z - inputs["alibi_slopes"].float()[:, None] * (i - j).abs().float()
    if "mask" in inputs:
        z = z + inputs["mask"].float()
    if params["causal"]:
        z = z.masked_fill(j > i, float("-inf"))
    if "sinks" in inputs:
        z = torch.cat([z, inputs["sinks"].float()[:, None]], dim=1)
    return {"y": torch.softmax(z, dim=-1)[:, :N].to(x.dtype)}


# The main configuration in every dtype; the others in the one dtype of their Triton twin (CPU CI time: each runs
# its whole catalogue here).
def _k(name, description, dts=FLOAT_IO, **params):
    return CallableKernel(name=name, op="softmax", fn=_masked_softmax, dtypes=dts,
                          params={"masked_rows": "nan", **params}, description=description)


KERNELS = [
    _k("torch-masked-softmax", "x·0.125 + mask, masked_fill(causal), softmax", scale=0.125, mask="MxN", causal=True),
    _k("torch-masked-softmax-bcast-softcap", "30·tanh(x·0.0884/30) + mask[N], softmax", [dtypes("f16")],
       scale=0.08838834764831845, mask="N", softcap=30.0),
    _k("torch-masked-softmax-alibi-sinks", "x - slope·|i + 3 - j|, causal (offset 3), cat(sink), softmax, drop sink",
       [dtypes("bf16")], causal=True, causal_offset=3, alibi_slopes=True, sinks=True),
]
