"""The worked example of docs/specs.md, "Your own op": two ops kernel-verifier does not bundle, declared here, and
kernels checked against them: torch callables and the CUDA kernels of row_ops.cu, correct ones and buggy ones.

    verifier check docs/examples/your_own_op/ops_spec.py            # the buggy kernels fail: exit 1
    verifier check docs/examples/your_own_op/ops_spec.py --kernel 'my-*'    # the correct ones pass
"""
import torch

from verifier.spec import CallableKernel, CudaKernel, Invariant, Launch, Op, Stride, dtypes


def row_amax_ref(inputs, params):  # float64 tensors in, float64 tensors out
    return {"y": inputs["x"].abs().amax(dim=-1)}


def l2norm_ref(inputs, params):
    x = inputs["x"]
    return {"y": x / torch.clamp(torch.sqrt((x * x).sum(-1, keepdim=True)), min=params["eps"])}


def unit_norm_gap(inputs, outputs, params):  # per row: | ||y|| - 1 | on rows whose norm is past eps
    norm = (inputs["x"] ** 2).sum(-1) ** 0.5
    return abs((outputs["y"] ** 2).sum(-1) ** 0.5 - 1.0) * (norm > params["eps"])


ROW_AMAX = Op("my_row_amax", inputs={"x": "MxN"}, outputs={"y": "M"}, reference=row_amax_ref)
L2NORM = Op("my_l2norm", inputs={"x": "MxN"}, outputs={"y": "MxN"}, params={"eps": 1e-12}, reference=l2norm_ref,
            invariants=[Invariant("unit", measure=unit_norm_gap, what="||y|| == 1 (value = | ||y|| - 1 |)",
                                  bound=lambda i, o, p, c: 2 * (i["x"].shape[1] + 4) * 2.0 ** -24
                                  + 2 * i["x"].shape[1] ** 0.5 * 2.0 ** -8)])
FLOATS = [dtypes("f32"), dtypes("bf16")]


def amax_launch(entry):
    return lambda M, N, dt, params: [Launch(f"{entry}_{dt.tag}", grid=(M,), block=(256,),
                                            args=("x", "y", "N", Stride("x", "int64")))]


def l2_launch(entry):
    return lambda M, N, dt, params: [Launch(f"{entry}_{dt.tag}", grid=(M,), block=(256,),
                                            args=("x", "y", "N", "eps", Stride("x", "int64"), Stride("y", "int64")))]


def my_amax(inputs, outputs, params, dt):
    outputs["y"].copy_(inputs["x"].float().abs().amax(-1))


def half_row_amax(inputs, outputs, params, dt):  # bug: looks at the first half of the row only
    x = inputs["x"].float()
    outputs["y"].copy_(x[:, : (x.shape[1] + 1) // 2].abs().amax(-1))


def my_l2(inputs, outputs, params, dt):
    x = inputs["x"].float()
    outputs["y"].copy_(x / x.norm(dim=-1, keepdim=True).clamp_min(params["eps"]))


def l2_bf16_sum(inputs, outputs, params, dt):  # bug: the squares summed in bfloat16, one element at a time
    x = inputs["x"].float()
    s = torch.zeros(x.shape[0], dtype=torch.bfloat16, device=x.device)
    for j in range(x.shape[1]):
        s = s + (x[:, j] * x[:, j]).to(torch.bfloat16)
    outputs["y"].copy_(x / s.float().sqrt().clamp_min(params["eps"])[:, None])


KERNELS = [
    CallableKernel(name="my-amax-torch", op=ROW_AMAX, fn=my_amax, dtypes=FLOATS),
    CallableKernel(name="my-l2norm-torch", op=L2NORM, fn=my_l2, dtypes=FLOATS),
    CudaKernel(name="my-amax-cuda", op=ROW_AMAX, source="row_ops.cu", dtypes=FLOATS, launches=amax_launch("row_amax")),
    CudaKernel(name="my-l2norm-cuda", op=L2NORM, source="row_ops.cu", dtypes=FLOATS, launches=l2_launch("l2norm")),
    # the buggy ones
    CallableKernel(name="bug-amax-half-row", op=ROW_AMAX, fn=half_row_amax, dtypes=[dtypes("f32")]),
    CallableKernel(name="bug-l2norm-bf16-sum", op=L2NORM, fn=l2_bf16_sum, dtypes=[dtypes("bf16")]),
    CudaKernel(name="bug-amax-cuda-nosync", op=ROW_AMAX, source="row_ops.cu", dtypes=FLOATS,
               launches=amax_launch("row_amax_nosync_bug")),
    CudaKernel(name="bug-amax-cuda-notail", op=ROW_AMAX, source="row_ops.cu", dtypes=FLOATS,
               launches=amax_launch("row_amax_notail_bug")),
    CudaKernel(name="bug-l2norm-cuda-noeps", op=L2NORM, source="row_ops.cu", dtypes=FLOATS,
               launches=l2_launch("l2norm_noeps_bug")),
]
