"""A merge written over its first state (outputs_alias={"v": "v_a", "lse": "lse_a"}, FlashInfer's
merge_state_in_place) is declarable: the alias may use the op's other name v_a, a float32 lse over the float32 lse_a
is one dtype whatever the values' dtype, and the refusal step's M = 0 probe empties every per-row input (lse_a[M]
too: an aliased lse[0] over a lse_a[1] was an internal error)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verifier.declare.registry import load_spec_file
from verifier.errors import SpecError
from verifier.isolation import check_all
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes

SPEC = Path(__file__).parent / "data" / "merge_in_place" / "merge_in_place_spec.py"


def _fn(inputs, outputs, params, dt):
    return None


def test_the_alias_takes_the_other_name_and_the_outputs_own_dtype():
    k = CallableKernel(name="m", op="merge_attn_states", fn=_fn, dtypes=[dtypes("bf16")],
                       outputs_alias={"v": "v_a", "lse": "lse_a"}, scratch_inputs=("v_b",))
    assert k.outputs_alias == {"v": "x", "lse": "lse_a"}
    s = CallableKernel(name="s", op="merge_attn_states", fn=_fn, dtypes=[dtypes("bf16")], scratch_inputs=("v_a",))
    assert s.scratch_inputs == ("x",)
    with pytest.raises(SpecError):  # bf16 values over the float32 lse: still two dtypes
        CallableKernel(name="bad", op="merge_attn_states", fn=_fn, dtypes=[dtypes("bf16")],
                       outputs_alias={"v": "lse_a"})


def test_in_place_merge_passes_and_a_stale_lse_fails():
    good, stale = load_spec_file(str(SPEC))
    opts = Options(device="cpu", level="quick", seed=0)
    r_good, r_stale = check_all([good, stale], opts)
    assert r_good.verdict == "pass", [f.message for f in r_good.findings]
    assert r_stale.verdict == "fail"
    assert any(f.check in ("unwritten", "value") and "lse" in f.message for f in r_stale.findings), \
        [f.message for f in r_stale.findings]
    assert not any(f.check in ("crash", "error") for f in r_good.findings + r_stale.findings)
