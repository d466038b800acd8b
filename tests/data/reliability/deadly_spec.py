"""Kernels that kill their process (issue #16, items 5 and 6), and one that is fine."""
import os

import torch

from verifier.spec import CallableKernel, dtypes
import ctypes


def segfault(inputs, outputs, params, dt):
    if inputs["x"].shape[-1] == 7:
        ctypes.string_at(0)
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))


def exits(inputs, outputs, params, dt):
    os._exit(1)


def dies(inputs, outputs, params, dt):  # in every test: under xdist, the worker running it
    os._exit(7)


def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))


S = lambda M, N, dt: None if N <= 256 else "N > 256"  # noqa: E731
KERNELS = [CallableKernel(name="segv", op="softmax", fn=segfault, dtypes=[dtypes("f32")], supports=S),
           CallableKernel(name="exits", op="softmax", fn=exits, dtypes=[dtypes("f32")], supports=S),
           CallableKernel(name="dies", op="softmax", fn=dies, dtypes=[dtypes("f32")], supports=S),
           CallableKernel(name="fine", op="softmax", fn=good, dtypes=[dtypes("f32")], supports=S)]
