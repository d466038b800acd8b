"""verifier.gpu.probe, the one GPU probe: capability and arch from the driver (cached, None without a GPU), the
driver's device count (0 without a driver), and what callers ask it instead of torch."""
from __future__ import annotations

import pytest

from verifier.errors import ToolMissing
from verifier.gpu import libcuda as cd
from verifier.gpu import probe


@pytest.fixture
def fresh():
    probe.driver_device_count.cache_clear()
    probe.capability.cache_clear()
    yield
    probe.driver_device_count.cache_clear()
    probe.capability.cache_clear()


def test_capability_and_arch_come_from_the_driver_once(monkeypatch, fresh):
    asked = []
    monkeypatch.setattr(cd, "device_count", lambda: 2)
    monkeypatch.setattr(cd, "device_capability", lambda: asked.append(1) or (9, 0))
    assert probe.capability() == (9, 0) and probe.capability() == (9, 0) and asked == [1]  # cached
    assert probe.device_arch() == "sm_90" and probe.driver_device_count() == 2


def test_no_gpu_is_no_capability_and_an_arch_is_tool_missing(monkeypatch, fresh):
    monkeypatch.setattr(cd, "device_count", lambda: 0)
    monkeypatch.setattr(cd, "device_capability", lambda: pytest.fail("asked a driver without devices"))
    assert probe.capability() is None
    with pytest.raises(ToolMissing, match="no CUDA GPU") as e:
        probe.device_arch()
    assert "--device cpu" in e.value.fix and "CUDA_VISIBLE_DEVICES" in e.value.fix


def test_no_driver_counts_no_device(monkeypatch, fresh):
    def no_driver():
        raise ToolMissing("no CUDA driver (libcuda) on this machine")

    monkeypatch.setattr(cd, "_lib", no_driver)
    assert probe.driver_device_count() == 0 and probe.capability() is None


def test_the_triton_mode_the_sanitizer_and_bench_ask_the_probe(monkeypatch):
    from verifier.bench import timing
    from verifier.launch import triton as tr
    from verifier.sanitizer import runs

    monkeypatch.delenv(tr.MODE_ENV, raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(tr, "_active", None)
    for answer, mode in ((True, "compiled"), (False, "interpreter")):
        monkeypatch.setattr(probe, "cuda_available", lambda: answer)
        assert tr.triton_mode() == mode and timing.gpu_available() is answer
    with pytest.raises(ToolMissing, match="no CUDA GPU"):
        runs._require_gpu()
    monkeypatch.setattr(probe, "cuda_available", lambda: True)
    runs._require_gpu()


class _FakeDriver:
    """libcuda's two calls the fork-safety probe makes: cuDeviceGetCount answers 3 (not initialised) until cuInit."""

    def __init__(self, initialised: bool):
        self.initialised, self.inits = initialised, 0

    def cuInit(self, flags):
        self.inits += 1
        self.initialised = True
        return 0

    def cuDeviceGetCount(self, ref):
        if not self.initialised:
            return 3
        ref._obj.value = 1
        return 0


def test_driver_initialized_asks_without_initialising(monkeypatch):
    drv = _FakeDriver(initialised=False)
    monkeypatch.setattr(cd, "_lib", lambda: drv)
    assert probe.driver_initialized() is False and drv.inits == 0
    drv.initialised = True
    assert probe.driver_initialized() is True


def test_fork_safe_count_leaves_an_uninitialised_driver_alone(monkeypatch, fresh):
    import subprocess
    import types

    drv = _FakeDriver(initialised=False)
    monkeypatch.setattr(cd, "_lib", lambda: drv)
    monkeypatch.setattr(cd, "device_count", lambda: pytest.fail("cuInit asked in this process"))
    asked = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: asked.append(cmd) or
                        types.SimpleNamespace(returncode=0, stdout="2\n"))
    probe.fork_safe_device_count.cache_clear()
    try:
        assert probe.fork_safe_device_count() == 2 and drv.inits == 0 and len(asked) == 1
        probe.fork_safe_device_count.cache_clear()
        drv.initialised = True  # already initialised here: nothing left to keep, the driver is asked in-process
        monkeypatch.setattr(cd, "device_count", lambda: 3)
        assert probe.fork_safe_device_count() == 3 and len(asked) == 1
    finally:
        probe.fork_safe_device_count.cache_clear()
