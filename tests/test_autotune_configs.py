"""Autotuned Triton kernels are checked in every config they may pick (issue #36): a config that is wrong is a bug on
the GPU or shape where the autotuner picks it, never seen where it picks another. The battery and the plugin pin each
config in turn (verifier.launch.triton_configs); findings say which config they used. In the Triton interpreter
(tests/data/autotune/: a row sum whose BLOCK=32 config has no loop over the row)."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "tests" / "data" / "autotune" / "autotune_spec.py"
if importlib.util.find_spec("triton") is None:  # find_spec: importing triton at collection fixes its mode
    pytest.skip("triton is not installed", allow_module_level=True)


def _check(*extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "TRITON_INTERPRET"}
    env["VERIFIER_TRITON_MODE"] = "interpreter"
    return subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(SPEC), "--device", "cpu", "--level",
                           "quick", "--format", "json", "--no-progress", *extra], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)


def test_a_wrong_config_is_found_and_named_and_a_right_kernel_passes_in_every_config():
    r = _check()
    assert r.returncode == 1, r.stderr[-2000:]
    kernels = {k["name"]: k for k in json.loads(r.stdout)["kernels"]}
    assert kernels["rowsum-autotuned-ok"]["verdict"] == "pass", kernels["rowsum-autotuned-ok"]["findings"][:2]
    notes = kernels["rowsum-autotuned-ok"]["notes"]  # the battery runs once per config; each note is said once
    assert notes and len(notes) == len(set(notes)), notes
    bug = kernels["rowsum-autotuned-bug"]
    assert bug["verdict"] == "fail"
    values = [f for f in bug["findings"] if f["check"] == "value"]
    assert values and all("under autotune config 2 of 2 (_rowsum: BLOCK=32" in f["message"] for f in values)
    assert not any("config 1 of 2" in f["message"] for f in bug["findings"])  # BLOCK=4096 holds every row here


def test_pinning_restores_the_configs_and_names_only_the_launchers_kernels():
    from verifier.launch import triton as runner
    from verifier.launch.triton import activate
    from verifier.launch.triton_configs import autotuners, label, pinned
    from verifier.spec import TritonKernel, dtypes

    activate("interpreter") if runner.triton_mode() == "interpreter" else pytest.skip("a compiled-mode worker")
    spec = TritonKernel(name="k", op="reduce_sum", module=str(SPEC.parent / "rowsum_autotuned.py"),
                        launcher="launch_bug", dtypes=[dtypes("f32")])
    mod = runner.load_module(spec)
    ((name, tuner),) = autotuners(mod, "launch_bug")
    assert name == "_rowsum" and len(tuner.configs) == 2
    seen = []
    real = tuner.fn.run
    tuner.fn.run = lambda *a, **kw: seen.append(kw.get("BLOCK"))  # the config each call hands the kernel
    try:
        import torch

        x, y = torch.ones(3, 64), torch.zeros(3)
        with pinned(mod, 1, "launch_bug"):
            mod.launch_bug({"x": x}, {"y": y}, {}, None)
        with pinned(mod, 5, "launch_bug"):  # past the list: its last
            mod.launch_bug({"x": x}, {"y": y}, {}, None)
    finally:
        tuner.fn.run = real
    assert seen == [32, 32]
    assert len(tuner.configs) == 2 and len(autotuners(mod)) == 2
    assert label(mod, 0, "launch_bug").startswith("autotune config 1 of 2 (_rowsum: BLOCK=4096, num_warps=4")
    assert runner.autotune_variants(TritonKernel(name="plain", op="softmax", module=str(ROOT / "kernels/triton/softmax.py"),
                                                 launcher="launch", dtypes=[dtypes("f32")])) == [(0, "")]


def test_an_autotuner_in_a_library_module_is_checked_in_every_config_its_pruning_allows():
    # The spec's launcher calls a library wrapper; the autotuned kernel lives in the library module (the launcher
    # never names it). Before: on the CPU the autotuner tried to benchmark ("0 active drivers"), on a GPU it picked one
    # config silently. Now it runs pinned, is remembered, and its other configs run; BLOCK=8, which its
    # early_config_prune drops for rows wider than 8, runs only where it is valid (no finding of its own).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "TRITON_INTERPRET"}
    env["VERIFIER_TRITON_MODE"] = "interpreter"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(ROOT / "tests/data/autotune_elsewhere/spec.py"),
                        "--device", "cpu", "--level", "quick", "--format", "json", "--no-progress"],
                       capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert r.returncode == 1, r.stderr[-2000:]
    (k,) = json.loads(r.stdout)["kernels"]
    values = [f for f in k["findings"] if f["check"] == "value"]
    assert values and all("of 3 (_rowsum_lib: BLOCK=32" in f["message"] for f in values), values[0]["message"]
    assert not any("config 1 of 3" in f["message"] for f in k["findings"])  # BLOCK=4096 holds every row here


def test_an_autotuner_reached_through_a_library_function_is_pinned_too():
    """A launcher calling its library's function (tests/data/autotune/via_library.py -> rowsum_library.rowsum, which
    launches the autotuned _rowsum): found where Triton runs it (Autotuner.run) and pinned; before, none was found, the
    interpreter's benchmark raised and the kernel's verdict was error instead of the BLOCK=32 config's failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "TRITON_INTERPRET"}
    env["VERIFIER_TRITON_MODE"] = "interpreter"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(SPEC.parent / "via_library_spec.py"),
                        "--device", "cpu", "--level", "quick", "--format", "json", "--no-progress"],
                       capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    (k,) = json.loads(r.stdout)["kernels"]
    assert k["verdict"] == "fail", (k.get("error"), k["findings"][:2])
    values = [f for f in k["findings"] if f["check"] == "value"]
    assert values and all("under autotune config 2 of 2 (_rowsum: BLOCK=32" in f["message"] for f in values)
