"""Every probability 5 % too large, on short rows: findings at every budget (issue #16, item 9)."""
import os

import torch

from verifier.spec import CallableKernel, dtypes


def big5(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1) * 1.05)


KERNELS = [CallableKernel(name="big5", op="softmax", fn=big5, dtypes=[dtypes("f32")],
                          supports=lambda M, N, dt: None if N <= 64 else "N > 64")]
