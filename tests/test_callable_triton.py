"""A callable over Triton kernels it does not declare (a library's torch function over its own kernels, as Liger's,
FLA's and Unsloth's are) is checked on the CPU: its kernels run in the Triton interpreter, with a TritonKernel's
interpreter patches (bf16 conversions replayed as compiled Triton rounds them) and its autotuners pinned config by
config. Before, every such callable was an `error` on the CPU ("0 active drivers": compiled Triton, or an
autotuner benchmarking, without a GPU), nothing checked (tests/data/autotune_elsewhere/callable_spec.py)."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)


@pytest.mark.interpreter
def test_callables_over_library_triton_kernels_get_true_verdicts_on_the_cpu():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_") and k not in ("TRITON_INTERPRET", "VERIFIER_TRITON_MODE")}
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check",
                        str(ROOT / "tests/data/autotune_elsewhere/callable_spec.py"),
                        str(ROOT / "tests/data/callable_boolops/spec.py"), "--device", "cpu", "--level",
                        "quick", "--format", "json", "--no-progress"], capture_output=True, text=True, env=env,
                       timeout=600, cwd=ROOT)
    kernels = {k["name"]: k for k in json.loads(r.stdout)["kernels"]}
    ok = kernels["callable-triton-rmsnorm"]  # the bundled Triton RMSNorm, bf16 included: its conversions round
    assert ok["verdict"] == "pass", (ok.get("error"), ok["findings"][:2])
    trunc = kernels["callable-triton-truncating"]  # ... while one truncating by bit shift is the rounding finding
    assert trunc["verdict"] == "fail" and {f["check"] for f in trunc["findings"]} == {"rounding"}, trunc.get("error")
    tuned = kernels["callable-rowsum-through-a-library"]  # autotuned in the library: each config its pruning allows
    values = [f for f in tuned["findings"] if f["check"] == "value"]
    assert tuned["verdict"] == "fail" and values, tuned.get("error")
    assert all("of 3 (_rowsum_lib: BLOCK=32" in f["message"] for f in values), values[0]["message"]
    pyand = kernels["callable-rowsum-python-and"]  # its library kernel masks with Python `and`: rewritten as
    assert pyand["verdict"] == "pass", (pyand.get("error"), pyand["findings"][:2])  # compiled Triton runs it
    assert pyand["checks"]["f32"]["value"] == "pass", pyand["checks"]["f32"]
    gap = kernels["callable-rowsum-walrus-and"]  # an `and` the rewrite leaves to Python: interpreted, the mask
    value = gap["checks"]["f32"]["value"]  # reads past the row; no case is judged (the first, which showed the
    assert gap["verdict"] == "unchecked" and not gap["findings"], gap["findings"]  # kernel, neither), none passes
    assert value.startswith("skipped(") and "Python `and`" in value and "rowsum_walrus.py:12" in value, value
    assert "leaves it to Python: a walrus" in value, value
    floats = kernels["callable-rowsum-float-arg"]  # raises inside the interpreter (a float argument's .to): the
    value = floats["checks"]["f32"]["value"]  # interpreter's gap, said as such, never a crash finding
    assert floats["verdict"] == "unchecked" and not floats["findings"], floats["findings"]
    assert value.startswith("skipped(") and "Python float argument" in value, value
    assert r.returncode == 1, r.stderr[-2000:]
