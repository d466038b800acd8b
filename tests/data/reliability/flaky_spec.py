"""A flaky kernel (issue #16, item 8): flakiness is a determinism finding. Wrong (5 % too large) the first time it
sees an input and right whenever that input comes again, so every failing Hypothesis draw passes on its replay, whatever
the catalogue ran before (a random 30 % of calls made the verdict depend on the draw sequence)."""
import hashlib

import torch

from verifier.spec import CallableKernel, dtypes

_seen: dict = {}


def flaky(inputs, outputs, params, dt):
    x = inputs["x"]
    key = (tuple(x.shape), hashlib.sha1(x.detach().cpu().contiguous().numpy().tobytes()).hexdigest())
    _seen[key] = _seen.get(key, 0) + 1
    y = torch.softmax(x.float(), -1)
    if _seen[key] == 1:  # wrong on an input's first call only
        y = y * 1.05
    outputs["y"].copy_(y)


KERNELS = [CallableKernel(name="flaky", op="softmax", fn=flaky, dtypes=[dtypes("f32")],
                          supports=lambda M, N, dt: None if N <= 512 else "N > 512")]
