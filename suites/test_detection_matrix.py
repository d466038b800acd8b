"""Detection matrix: every catalogued defect (kernels/defects) is caught by its declared check
class, and every correct twin passes the same battery.

CPU entries (Triton in the interpreter, ptxas resources via the local nvcc) run everywhere; the
others need a CUDA GPU (`gpu`) and, for racecheck/memcheck/synccheck/initcheck, compute-sanitizer
(`sanitizer`), and are not generated where they could only skip (the session's last line counts them, with
the reason). Seed fixed at 0; the device is resolved once ('auto').
`tools/detection_table.py run` writes the same results as JSON for docs/detection-matrix.md.
"""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from verifier.gpu.probe import resolve_device
from verifier.plugin.session import NOT_GENERATED

_PATH = Path(__file__).resolve().parents[1] / "kernels" / "defects" / "matrix.py"
_spec = importlib.util.spec_from_file_location("kernel_defect_matrix", _PATH)
matrix = sys.modules.get("kernel_defect_matrix") or importlib.util.module_from_spec(_spec)
if "kernel_defect_matrix" not in sys.modules:
    sys.modules["kernel_defect_matrix"] = matrix
    _spec.loader.exec_module(matrix)

# Whole batteries and sanitizer runs, 10-40 s a test on a GPU: spread through the collection (one xdist worker
# would otherwise get the whole module as one run of consecutive tests).
pytestmark = pytest.mark.verifier_spread

ENTRIES = matrix.load_entries()
DEVICE = resolve_device("auto")
SEED = 0
SLOW_ENV = "VERIFIER_DETECTION_SLOW"


def _marks(entry):
    marks = []
    if entry.device == "gpu":
        marks.append(pytest.mark.gpu)
    if entry.sanitizer:
        marks.append(pytest.mark.sanitizer)
    return marks


def _twin_params():
    """One test per twin: it must pass its battery plus every exposing input of its defects."""
    by_twin: dict = {}
    for e in ENTRIES:
        by_twin.setdefault(e.twin, []).append(e)
    params = []
    for twin, entries in sorted(by_twin.items()):
        marks = []
        if all(e.device == "gpu" for e in entries) and entries[0].twin_spec.kind == "cuda":
            marks.append(pytest.mark.gpu)
        if any(e.sanitizer for e in entries):
            marks.append(pytest.mark.sanitizer)
        params.append(pytest.param(twin, entries, id=twin, marks=marks))
    return params


def _not_generated(why: str, n: int) -> None:
    """Tests that could only skip here are not generated; the plugin's last line counts them (with the reason)."""
    NOT_GENERATED[why] += n


def _defect_params():
    params = []
    for e in ENTRIES:
        if matrix.skip_reason(e, DEVICE):
            _not_generated("detection-matrix defects whose check needs a CUDA GPU or compute-sanitizer", 1)
        else:
            params.append(pytest.param(e, id=e.name, marks=_marks(e)))
    return params


@pytest.mark.parametrize("entry", _defect_params())
def test_defect_is_caught_by_its_declared_class(entry):
    why = matrix.skip_reason(entry, DEVICE)
    if why:
        pytest.skip(why)
    result = matrix.run_defect(entry, DEVICE, seed=SEED)
    assert result["error"] is None, f"{entry.name}: the battery errored: {result['error']}"
    assert result["caught"], (
        f"{entry.name} ({entry.pitfall}) was not caught by {entry.caught_by} on {result['case']}; "
        f"classes that fired: {result['classes'] or 'none'}")


def _check_twin(twin, entries, whole_battery):
    spec = entries[0].twin_spec
    sanitize = DEVICE == "cuda" and any(e.sanitizer for e in entries)
    if sanitize and importlib.util.find_spec("verifier.sanitizer") is None:
        pytest.skip("verifier.sanitizer (compute-sanitizer battery hook) is not installed")
    result = matrix.run_twin(spec, [e.exposing_input for e in entries], DEVICE, seed=SEED, sanitize=sanitize,
                             whole_battery=whole_battery)
    assert result["error"] is None, f"twin {twin}: the battery errored: {result['error']}"
    assert not result["classes"], f"twin {twin} should pass but {result['classes']} fired: {result['first']}"
    if spec.kind == "cuda" and DEVICE != "cuda":
        return  # built and resource-checked only: nothing else runs without a GPU
    assert result["verdict"] == "pass", f"twin {twin}: verdict {result['verdict']}"


@pytest.mark.parametrize("twin, entries", _twin_params())
def test_twin_passes_every_case(twin, entries):
    """Every quick catalogue case and its defects' exposing inputs (on a GPU: the whole battery)."""
    _check_twin(twin, entries, whole_battery=DEVICE == "cuda")


def _whole_battery_params():
    if DEVICE == "cuda" or os.environ.get(SLOW_ENV) != "1":
        why = ("detection-matrix whole-battery twin runs: " + ("on a GPU test_twin_passes_every_case runs them"
               if DEVICE == "cuda" else f"minutes each in the Triton interpreter; set {SLOW_ENV}=1 "
               "(tools/detection_table.py run does, and records the result)"))
        _not_generated(why, len(_twin_params()))
        return []
    return _twin_params()


_WHOLE = _whole_battery_params()
if _WHOLE:  # else not generated at all: an empty parametrization would be one skipped item
    @pytest.mark.slow
    @pytest.mark.parametrize("twin, entries", _WHOLE)
    def test_twin_passes_whole_battery_on_cpu(twin, entries):
        """The whole quick battery (refusal, boundary row, determinism) in the Triton interpreter: minutes
        for the loop-heavy twins, hence `slow`; on a GPU test_twin_passes_every_case already runs it."""
        _check_twin(twin, entries, whole_battery=True)


def test_catalogue_holds_at_least_15_defects_with_a_ci_runnable_core():
    assert len(ENTRIES) >= 15
    cpu = [e for e in ENTRIES if e.device == "cpu"]
    assert len({e.caught_by for e in cpu}) >= 5, "CI should exercise several check classes"
