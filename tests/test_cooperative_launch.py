"""Launch(cooperative=True): a kernel joining its blocks with cooperative groups' grid sync (ggml's
soft_max_f32_parallelize_cols for long vocabularies) must be launched as cudaLaunchCooperativeKernel launches it;
before the field a spec could not say so, and a plain launch makes the grid check trap. On the CPU: the driver call
the runner makes (a stub driver), the launch check, and the build and lint of tests/data/cooperative/ (the GPU half:
tests/test_cooperative_launch_gpu.py)."""
from pathlib import Path

import numpy as np
import pytest

from verifier.declare.registry import load_spec_file
from verifier.gpu import libcuda
from verifier.spec import Launch
from verifier.toolchain.nvcc import nvcc_version

SPEC = Path(__file__).resolve().parent / "data" / "cooperative" / "coop_sum_spec.py"


class _Driver:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, len(args)))
            return 0
        return call


@pytest.mark.parametrize("cooperative, want", [(True, ("cuLaunchCooperativeKernel", 10)),
                                               (False, ("cuLaunchKernel", 11))])
def test_the_driver_call_follows_the_flag(monkeypatch, cooperative, want):
    drv = _Driver()
    monkeypatch.setattr(libcuda, "_lib", lambda: drv)
    libcuda.launch(1, (8,), (256,), None, 0, 0, "k", cooperative)
    assert drv.calls == [want]


def test_the_runner_passes_it(monkeypatch):
    from verifier.launch import cuda as runner

    seen = []
    monkeypatch.setattr(runner.cd, "launch", lambda *a: seen.append(a[-1]))
    monkeypatch.setattr(runner.cd, "stream_synchronize", lambda *a: None)
    bound = [runner.Bound(1, Launch("k", (8,), (256,), ("x",), cooperative=c), []) for c in (True, False)]
    runner.launch(runner.Prepared(bound, 0, {}), sync=True)
    assert seen == [True, False]


def test_a_flag_that_is_no_bool_is_a_build_problem():
    from verifier.battery.launch_check import _geometry

    assert any("cooperative" in m for m, _ in _geometry(0, Launch("k", (8,), (256,), (), cooperative="yes")))
    assert not _geometry(0, Launch("k", (8,), (256,), (), cooperative=True))


@pytest.mark.skipif(nvcc_version() is None, reason="the build and lint need nvcc, not found")
def test_the_grid_sync_kernel_builds_and_lints_clean():
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    spec = next(k for k in load_spec_file(str(SPEC)) if k.name == "coop-row-sum")
    report = check_kernel(spec, Options(level="quick", device="cpu"))
    assert report.cells[("f32", "build")] == "pass" and report.cells[("f32", "static")] == "pass", \
        [f.message for f in report.findings]
