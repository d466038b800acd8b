"""tools/detection_table.py merge: defects run in parallel (one process each) joined into one result."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from detection_table import merge  # noqa: E402


def _run(defect, twin_verdict, twin_classes, device="cuda"):
    return {"device": device, "budget": "ci", "seed": 0, "sanitize": True,
            "defects": {defect: {"caught": True, "classes": ["value"]}},
            "twins": {"t": {"verdict": twin_verdict, "classes": twin_classes, "first": {}, "error": None,
                            "scope": f"quick + {defect}"}}}


def test_defects_are_joined_and_a_twin_failing_in_any_run_fails():
    out = merge([_run("a", "pass", []), _run("b", "fail", ["value"])])
    assert sorted(out["defects"]) == ["a", "b"] and out["device"] == "cuda"
    assert out["twins"]["t"]["verdict"] == "fail" and out["twins"]["t"]["classes"] == ["value"]
    assert out["twins"]["t"]["scope"] == "quick + a + quick + b"


def test_runs_of_different_settings_or_overlapping_defects_are_refused():
    with pytest.raises(SystemExit, match="different settings"):
        merge([_run("a", "pass", []), _run("b", "pass", [], device="cpu")])
    with pytest.raises(SystemExit, match="defect a is in two"):
        merge([_run("a", "pass", []), _run("a", "pass", [])])
