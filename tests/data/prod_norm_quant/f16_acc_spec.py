"""An RMSNorm declared with float16 accumulation (as Liger's casting_mode='none' computes it), derived budget
(tests/test_prod_norm_quant.py): on rows of 1024 values near 1000 the float16 bound is at least each value (N·u ~ 1,
and the sum of squares is past float16's range), so a kernel writing zeros (what float16 accumulation gives there:
the sum overflows, rstd = 0) would pass unseen; the check says so (a warning). On ordinary rows of 128 it is judged."""
import torch
import torch.nn.functional as F

from verifier.spec import CallableKernel, Op, dtypes

RMS16 = Op("rms_f16_acc", inputs={"x": "MxN", "w": "N"}, outputs={"y": "MxN"}, params={"eps": 1e-6},
           reference=lambda i, p: {"y": F.rms_norm(i["x"], i["x"].shape[-1:], i["w"], p["eps"])},
           extra_tolerances=(("float16", "float16", None),))


def zeros(inputs, outputs, params, dt):
    return {"y": torch.zeros_like(inputs["x"])}


KERNELS = [CallableKernel(name="rms-f16acc-zeros", op=RMS16, fn=zeros, device="cpu", dtypes=[dtypes("f16", acc="f16")])]
