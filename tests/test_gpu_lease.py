"""Turns at a GPU's memory for the large cases of kernels checked at once (verifier.gpu.lease): a large case that
ran out of memory beside others runs again alone, a gate short of free memory waits for the others, and the turns
are locks between processes (on 2026-12-05 ten torch compositions lost their large cases to their neighbours on
an H100)."""
import multiprocessing as mp
import time
import uuid

import numpy as np
import pytest

from verifier.battery import gate, values
from verifier.gpu import lease
from verifier.launch.harness import KernelFault
from verifier.inputs import layouts


def _env():  # a GPU name of its own: no real run shares these locks
    return {"CUDA_VISIBLE_DEVICES": f"test-{uuid.uuid4().hex}"}


def _hold_shared(env, started, release):
    with lease.shared(env):
        started.set()
        release.wait(20)


def _take_exclusive(env, got):
    with lease.exclusive(env):
        got.set()


def _take_shared(env, got):
    with lease.shared(env):
        got.set()


def test_shared_turns_run_together_and_an_exclusive_one_waits_for_them():
    ctx = mp.get_context("spawn")
    env = _env()
    started, release, got_ex, got_sh = (ctx.Event() for _ in range(4))
    holder = ctx.Process(target=_hold_shared, args=(env, started, release))
    holder.start()
    assert started.wait(20)
    with lease.shared(env):  # a second shared turn beside the first
        assert lease.held_by_others(env) is True
    ex = ctx.Process(target=_take_exclusive, args=(env, got_ex))
    ex.start()
    time.sleep(1.0)
    assert not got_ex.is_set(), "an exclusive turn ran while a shared one was held"
    late = ctx.Process(target=_take_shared, args=(env, got_sh))  # comes after the waiting exclusive turn
    late.start()
    time.sleep(1.0)
    assert not got_sh.is_set(), "a new shared turn passed an exclusive one waiting (it could starve)"
    release.set()
    assert got_ex.wait(20) and got_sh.wait(20)
    for p in (holder, ex, late):
        p.join(20)
    assert lease.held_by_others(env) is False


def test_a_dead_holder_lets_go():
    ctx = mp.get_context("spawn")
    env = _env()
    started, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold_shared, args=(env, started, release))
    p.start()
    assert started.wait(20)
    p.kill()
    p.join(20)
    with lease.exclusive(env):
        pass




def _oom_fault():
    import torch

    try:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB.")
    except Exception as e:
        return KernelFault(e)


def test_a_large_case_out_of_memory_runs_again_alone(monkeypatch):
    calls, turns = [], []
    monkeypatch.setattr(lease, "shared", lambda env=None: _turn(turns, "shared"))
    monkeypatch.setattr(lease, "exclusive", lambda env=None: _turn(turns, "exclusive"))

    def fake_execute(*a, **k):
        calls.append(turns[-1])
        if len(calls) == 1:
            raise _oom_fault()
        return "outcome"

    monkeypatch.setattr(values, "execute", fake_execute)
    large = layouts.Layout(kind=layouts.LARGE)
    spec = type("S", (), {"op_params": lambda self: {}})()
    assert values._execute_in_turn(None, spec, {}, None, "cuda", large) == "outcome"
    assert calls == ["shared", "exclusive"]


def test_other_faults_and_small_cases_take_no_second_run(monkeypatch):
    turns = []
    monkeypatch.setattr(lease, "shared", lambda env=None: _turn(turns, "shared"))
    monkeypatch.setattr(lease, "exclusive", lambda env=None: _turn(turns, "exclusive"))
    spec = type("S", (), {"op_params": lambda self: {}})()
    large = layouts.Layout(kind=layouts.LARGE)

    def fails(*a, **k):
        raise KernelFault(RuntimeError("my kernel does not take this"))

    monkeypatch.setattr(values, "execute", fails)
    with pytest.raises(KernelFault):
        values._execute_in_turn(None, spec, {}, None, "cuda", large)
    assert turns == ["shared"]
    monkeypatch.setattr(values, "execute", lambda *a, **k: "small")
    assert values._execute_in_turn(None, spec, {}, None, "cuda", layouts.DEFAULT) == "small"
    assert values._execute_in_turn(None, spec, {}, None, "cpu", large) == "small"
    assert turns == ["shared"]  # a small case, or a large one on the CPU, takes no turn


def test_a_gate_short_of_free_memory_waits_for_the_others_then_measures_again(monkeypatch):
    from verifier.gpu import probe
    from verifier.launch import large as large_mod

    turns, free = [], iter([1 << 30, 64 << 30])
    monkeypatch.setattr(lease, "exclusive", lambda env=None: _turn(turns, "exclusive"))
    monkeypatch.setattr(probe, "free_memory", lambda: next(free))
    monkeypatch.setattr(large_mod, "aliased", lambda: True)
    monkeypatch.setattr(large_mod, "required_bytes", lambda *a, **k: 8 << 30)
    spec = type("S", (), {"op": "softmax", "op_params": lambda self: {}})()
    assert gate.large_device_reason(spec, None, 1 << 16, 1 << 15, "cuda") is None
    assert turns == ["exclusive"]
    free = iter([1 << 30, 2 << 30])
    monkeypatch.setattr(probe, "free_memory", lambda: next(free))
    why = gate.large_device_reason(spec, None, 1 << 16, 1 << 15, "cuda")
    assert why and "8.6 GB" in why and "2.1 GB free" in why, why


class _turn:
    def __init__(self, log, kind):
        self.log, self.kind = log, kind

    def __enter__(self):
        self.log.append(self.kind)

    def __exit__(self, *exc):
        return False


def test_mappings_are_unmapped_only_after_the_queued_work_ends():
    """A composition that ran out of memory mid-call leaves its earlier launches running; the large case's
    mappings were unmapped under them (an illegal address in torch's own kernels, H100 2026-12-05)."""
    from verifier.launch.large import _Mapped

    log = []

    class Maps:
        chunk, shared_chunks = 1 << 21, 16

        def settle(self):
            log.append("synchronize")

    class Buf:
        def close(self):
            log.append("unmap")

    class Inner:
        def close(self):
            log.append("inner")

    m = _Mapped(Inner(), rows=[0], maps=Maps())
    m.bufs = [Buf(), Buf()]
    m.close()
    assert log == ["synchronize", "inner", "unmap", "unmap"]
