"""A library autotuner subclassing Triton's Autotuner with a ``run`` of its own (FlagGems' LibTuner: its own cache
and benchmark policy) is pinned to each config in turn like any @triton.autotune (verifier.launch.triton_configs).
Before, only Autotuner.run was wrapped: on the CPU the subclass benchmarked ("0 active drivers", verdict error), on a
GPU it picked the fastest config and every "config i of N" checked that one. tests/data/autotune_own_run/: a row sum
whose BLOCK=32 config has no loop over the row, behind such a tuner."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "autotune_own_run"
if importlib.util.find_spec("triton") is None:  # find_spec: importing triton at collection fixes its mode
    pytest.skip("triton is not installed", allow_module_level=True)


def test_a_library_tuners_own_run_is_pinned_and_its_wrong_config_found():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "TRITON_INTERPRET"}
    env["VERIFIER_TRITON_MODE"] = "interpreter"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(DATA / "spec.py"), "--device", "cpu",
                        "--level", "quick", "--format", "json", "--no-progress"], capture_output=True, text=True,
                       env=env, timeout=600, cwd=ROOT)
    assert r.returncode == 1, r.stderr[-2000:]
    (kernel,) = json.loads(r.stdout)["kernels"]
    assert kernel["verdict"] == "fail", (kernel["verdict"], kernel.get("error"))
    values = [f for f in kernel["findings"] if f["check"] in ("value", "invariant")]
    assert values and all("under autotune config 2 of 2 (_rowsum: BLOCK=32" in f["message"] for f in values)
    assert not any("config 1 of 2" in f["message"] for f in kernel["findings"])  # BLOCK=4096 holds every row here


def test_a_tuner_class_defined_after_the_first_pin_is_pinned_too():
    from verifier.launch.triton import activate, triton_mode

    activate("interpreter") if triton_mode() == "interpreter" else pytest.skip("a compiled-mode worker")
    import torch
    import triton
    import triton.language as tl
    from triton.runtime.autotuner import Autotuner

    from verifier.launch.triton_configs import pinned

    with pinned(None, 0):  # the first pin wraps what exists now; the class below comes later
        pass

    class LateTuner(Autotuner):
        def run(self, *args, **kwargs):  # benchmarks with more than one config, as a library tuner does
            assert len(self.configs) == 1, "not pinned: the tuner would benchmark"
            return self.fn.run(*args, **kwargs, **self.configs[0].all_kwargs())

    @triton.jit
    def _fill(y_ptr, BLOCK: tl.constexpr):
        tl.store(y_ptr + tl.arange(0, 1), tl.full((1,), BLOCK, tl.float32))

    tuner = LateTuner(_fill, _fill.arg_names, [triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})], [],
                      None, None)
    y = torch.zeros(1)
    with pinned(None, 1):
        tuner[(1,)](y)
    assert y.item() == 8.0


def test_launches_that_go_around_the_autotuner_under_a_config_are_said_not_checked():
    # A cache above the autotuner (FlagGems' libentry) relaunches config 1's kernel for every signature it met, so
    # under config 2 the autotuner is never asked: before, config 2 "passed" with config 1's values, unsaid.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "TRITON_INTERPRET"}
    env["VERIFIER_TRITON_MODE"] = "interpreter"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(DATA / "cached_spec.py"), "--device", "cpu",
                        "--level", "quick", "--format", "json", "--no-progress"], capture_output=True, text=True,
                       env=env, timeout=600, cwd=ROOT)
    (kernel,) = json.loads(r.stdout)["kernels"]
    around = [n for n in kernel["notes"] if "went around the autotuner" in n]
    assert len(around) == 1 and around[0].startswith("autotune config 2 of 2 (_rowsum: BLOCK=32"), kernel["notes"]
    assert "_rowsum (0 of " in around[0]


def test_configs_differing_only_in_compile_options_run_once_in_the_interpreter():
    # The interpreter ignores num_warps / num_stages: FlagGems' var_mean lists 24 configs, 8 of them distinct there.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "TRITON_INTERPRET"}
    env["VERIFIER_TRITON_MODE"] = "interpreter"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(DATA / "warps_spec.py"), "--device", "cpu",
                        "--level", "quick", "--format", "json", "--no-progress"], capture_output=True, text=True,
                       env=env, timeout=600, cwd=ROOT)
    kernels = {k["name"]: k for k in json.loads(r.stdout)["kernels"]}
    kernel = kernels["rowsum-warps-only"]
    again = [n for n in kernel["notes"] if "not run again in the Triton interpreter" in n]
    assert len(again) == 1 and again[0].startswith("autotune config 2 of 3 (_rowsum: BLOCK=4096, num_warps=8"), again
    assert "differs from autotune config 1 of 3 only" in again[0]
    values = [f for f in kernel["findings"] if f["check"] in ("value", "invariant")]
    assert kernel["verdict"] == "fail" and values  # BLOCK=32, config 3, is still run and found
    assert all("under autotune config 3 of 3 (_rowsum: BLOCK=32" in f["message"] for f in values)
    # the autotuner of a library module is known only once it ran (under config 1): config 3 still matches it
    lib = kernels["rowsum-warps-only-via-library"]
    again = [n for n in lib["notes"] if "not run again in the Triton interpreter" in n]
    assert len(again) == 1 and again[0].startswith("autotune config 3 of 3 (_rowsum_lib: BLOCK=4096, num_warps=8"), \
        lib["notes"]
    assert lib["verdict"] == "fail"
