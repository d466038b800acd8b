"""A kernel that kills its (xdist worker) process in every test, and one that lives (issue #16, item 6)."""
import os

import torch

from verifier.spec import CallableKernel, dtypes


def dies(inputs, outputs, params, dt):
    os._exit(7)


def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))


S = lambda M, N, dt: None if N <= 256 else "N > 256"  # noqa: E731
KERNELS = [CallableKernel(name="dies", op="softmax", fn=dies, dtypes=[dtypes("f32")], supports=S),
           CallableKernel(name="lives", op="softmax", fn=good, dtypes=[dtypes("f32")], supports=S)]
