"""A kernel taking several rows per program from a large batch of short rows (attorch's rule: 2 rows from 2048 when
N < 64) runs that path on no catalogue case below 2048 rows. The 'thorough' case m2049_short_rows (2049 x 16) reaches
it with an odd M: a grid of M // R programs leaves the last row unwritten. In the Triton interpreter."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.declare.registry import load_spec_file
from verifier.inputs.cases import cases_for

if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

SPEC = Path(__file__).resolve().parent / "data" / "short_rows" / "short_rows_spec.py"
CASE = "m2049_short_rows"


def _kernels():
    return {k.name: k for k in load_spec_file(SPEC)}


def test_the_case_is_thorough_only_and_keeps_its_rows():
    k = _kernels()["rowsum-rows-per-program"]
    dt = k.dtypes[0]
    assert [(c.M, c.N) for c in cases_for(k, dt, "thorough") if c.name == CASE] == [(2049, 16)]
    assert all(c.name != CASE for level in ("quick", "ci") for c in cases_for(k, dt, level))


def test_a_grid_of_m_over_r_programs_loses_the_last_row():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "TRITON_INTERPRET"}
    env["VERIFIER_TRITON_MODE"] = "interpreter"
    p = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(SPEC), "--device", "cpu", "--level",
                        "thorough", "--case", CASE, "--format", "json", "--no-progress"], capture_output=True,
                       text=True, env=env, timeout=600, cwd=SPEC.parents[3])
    kernels = {k["name"]: k for k in json.loads(p.stdout)["kernels"]}
    ok, floor = kernels["rowsum-rows-per-program"], kernels["rowsum-rows-per-program-floor"]
    assert ok["verdict"] == "pass", ok["findings"][:2]
    assert floor["verdict"] == "fail" and {f["check"] for f in floor["findings"]} & {"unwritten", "value"}
    assert all(f["input"] == CASE for f in floor["findings"]), floor["findings"]
