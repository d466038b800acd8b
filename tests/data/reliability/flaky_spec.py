"""A kernel wrong on a random 30 % of calls (issue #16, item 8): flakiness is a determinism finding."""
import os

import torch

from verifier.spec import CallableKernel, dtypes
import random

_rng = random.Random(1234)


def flaky(inputs, outputs, params, dt):
    y = torch.softmax(inputs["x"].float(), -1)
    if _rng.random() < 0.3:  # wrong on a random 30 % of calls
        y = y * 1.05
    outputs["y"].copy_(y)


KERNELS = [CallableKernel(name="flaky", op="softmax", fn=flaky, dtypes=[dtypes("f32")],
                          supports=lambda M, N, dt: None if N <= 512 else "N > 512")]
