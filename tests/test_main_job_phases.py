"""benchmarks/main_job_phases.py (issue #36's cost: where a cold check's time goes): the functions it times still
exist under the names it patches, so a torch kernel's check shows its launch, reference and comparison as phases
of their own, and the phases with ``other`` add up to the kernel's total."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_checks_time_is_split_into_its_phases(tmp_path):
    out = tmp_path / "phases.json"
    r = subprocess.run([sys.executable, "benchmarks/main_job_phases.py", "kernels/torch/spec.py", "--kernel",
                        "torch-reduce-sum", "--level", "quick", "--device", "cpu", "--jobs", "2", "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (row,) = json.loads(out.read_text())["rows"]
    phases = row["phases"]
    for phase in ("launch", "reference", "compare", "inputs"):
        assert phases.get(phase, 0) > 0, (phase, phases)
    assert abs(sum(phases.values()) - row["seconds"]) < 1e-6
    assert phases["other"] < 0.5 * row["seconds"], phases  # the timed phases hold most of it
