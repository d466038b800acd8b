"""verifier bench on a GPU: a call that cannot be captured in a CUDA graph (it synchronizes) is timed behind the
delay, and torch's default CUDA generator still draws afterwards (a failed capture left it in capture mode: Liger's
cross entropy ended `verifier bench` on an H200, 2026-12-05)."""
from __future__ import annotations

import pytest

from gpu_requirements import gpu_and_nvcc_reason

_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_an_uncapturable_call_is_timed_and_the_default_generator_still_draws():
    import torch

    from verifier.bench import clock

    x = torch.randn(1024, device="cuda")
    y = torch.empty_like(x)

    def syncs():  # .item() synchronizes: no capture can hold it
        y.copy_(x * float((x > 0).sum().item()))
        return y

    timing = clock.measure(clock.TorchDevice(), syncs, lambda ret: [y], runs=5, warmup=1)
    assert timing.method == clock.DELAY and "not captured" in timing.note, timing
    assert torch.randn(16, device="cuda").isfinite().all()  # raised "Offset increment outside graph capture"
