"""A child that dies while checking an autotuned Triton kernel names the config it was under (the battery logs a
step line per config; verifier.isolation.children reads the last one back): FlagGems' cross entropy corrupts the
heap only under its BLOCK_D > 1 configs, and a crash naming only the input left that to guess."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from verifier.isolation import children
from verifier.results.options import Options

DATA = Path(__file__).parent / "data" / "autotune_crash" / "rowsum_dies_spec.py"


class _S:
    name = "k"
    origin = "k_spec.py"
    dtypes = ()


def _out(*steps):
    return "".join(f"{children.STEP_PREFIX}{s}\n" for s in steps) + "Aborted\n"


def test_the_last_config_line_is_read_back():
    cfg = "autotune config 2 of 9 (_ce: BLOCK_C=256, BLOCK_D=4, num_warps=4, num_stages=3)"
    out = _out("k: build", "k [f32]: refusal", "k [f32]: values", "k [f32]: values under " + cfg, "k [f32]: n1000")
    assert children._last_step(out, _S) == {"dtype": "f32", "input": "n1000"}
    assert children._last_config(out, _S) == cfg
    r = children.dead_child_report("crash", "the process checking this kernel died", "", _S, Options(device="cpu"), out)
    assert f"input n1000 under {cfg}" in r.findings[0].message
    # died right at the config line: no input; in the determinism step (first config, unlabelled): no config
    assert children._last_step(_out("k [f32]: values under " + cfg), _S) == {"dtype": "f32"}
    assert children._last_config(_out("k [f32]: values under " + cfg, "k [f32]: n1000", "k [f32]: determinism"),
                                 _S) == ""
    assert children._last_config(_out("k [f32]: values", "k [f32]: n1000"), _S) == ""


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_a_crash_under_the_second_config_names_it(tmp_path):
    from verifier.declare.registry import load_spec_file
    from verifier.isolation import check_all

    spec = load_spec_file(str(DATA))[0]
    r, = check_all([spec], Options(device="cpu", level="quick", seed=0))
    crash = [f for f in r.findings if f.check == "crash"]
    assert crash, [f.message for f in r.findings]
    assert "under autotune config 2 of 2 (_rowsum: BLOCK=2048" in crash[0].message, crash[0].message
