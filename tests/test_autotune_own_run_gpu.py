"""On a GPU (compiled Triton), the library-autotuner paths of tests/test_autotune_own_run.py: an Autotuner subclass
with its own run (FlagGems' LibTuner) is pinned, so its BLOCK=32 config is found (before, the GPU benchmarked and
checked the fastest config under every label); a cache above the autotuner (FlagGems' libentry) that relaunches an
earlier config's kernel gets the "not all checked" note; configs differing only in num_warps all run compiled."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "autotune_own_run"
_REASON = gpu_and_nvcc_reason()  # tests/gpu_requirements.py
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _kernels(tmp_path, spec):
    env = dict(os.environ, VERIFIER_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(DATA / spec), "--device", "cuda",
                          "--level", "quick", "--format", "json", "--no-progress"], capture_output=True, text=True,
                         env=env, timeout=600, cwd=ROOT)
    assert out.stdout.strip().startswith("{"), out.stdout[-3000:] + out.stderr[-3000:]
    return {k["name"]: k for k in json.loads(out.stdout)["kernels"]}


def test_a_library_tuners_own_run_is_pinned_compiled(tmp_path):
    kernel = _kernels(tmp_path, "spec.py")["rowsum-own-tuner"]
    values = [f for f in kernel["findings"] if f["check"] in ("value", "invariant")]
    assert kernel["verdict"] == "fail" and values, kernel
    assert all("under autotune config 2 of 2 (_rowsum: BLOCK=32" in f["message"] for f in values)


def test_a_cache_above_the_autotuner_is_said_compiled(tmp_path):
    kernel = _kernels(tmp_path, "cached_spec.py")["rowsum-cached-above-tuner"]
    assert any(n.startswith("autotune config 2 of 2 (_rowsum: BLOCK=32") and "went around the autotuner" in n
               for n in kernel["notes"]), kernel["notes"]


def test_configs_differing_only_in_num_warps_all_run_compiled(tmp_path):
    kernels = _kernels(tmp_path, "warps_spec.py")
    for name in ("rowsum-warps-only", "rowsum-warps-only-via-library"):
        assert not any("not run again" in n for n in kernels[name]["notes"]), kernels[name]["notes"]
        assert kernels[name]["verdict"] == "fail"
