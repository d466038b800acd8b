"""The project's own compute-sanitizer captures (tests/data/sanitizer/, made on a GPU by
tools/capture_sanitizer_fixtures.sh from kernels/cuda/softmax_spec.py and kernels/defects/cuda/defects.py).

Skipped only while the directory does not exist; once it does, a missing file is a failure (except the
optional uninit_initcheck.xml, captured only when the catalogue has defect-uninitialized-smem-read).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from verifier.sanitizer.xmlparse import SourceMap, finding_kind, parse, to_findings

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "sanitizer"
pytestmark = pytest.mark.skipif(not DATA.is_dir(),
                                reason="fixture not yet captured: run tools/capture_sanitizer_fixtures.sh on a GPU")
TOOLS = ("racecheck", "memcheck", "synccheck", "initcheck")


def _findings(name: str, tool: str):
    path = DATA / name
    assert path.is_file(), f"{path} is missing: rerun tools/capture_sanitizer_fixtures.sh on a GPU"
    parsed = parse(str(path), tool)
    assert parsed.complete, parsed.error
    return parsed.records, to_findings(parsed.records, SourceMap(REPO), kernel="k")


def _errors(fs, kind_prefix):
    return [f for f in fs if f.severity == "error" and finding_kind(f).startswith(kind_prefix)]


def _in_repo(f, under: str):
    assert f.file and f.file.startswith(under) and (REPO / f.file).is_file(), f"{f.file}: {f.message}"


@pytest.mark.parametrize("tool", TOOLS)
def test_clean_kernel_has_no_errors(tool):
    _, fs = _findings(f"clean_{tool}.xml", tool)
    assert [f.message for f in fs if f.severity == "error"] == []


def test_missing_syncthreads_is_a_race_in_the_defect_source():
    _, fs = _findings("race_racecheck.xml", "racecheck")
    races = _errors(fs, "RaceHazard")
    assert races, "racecheck recorded no race for defect-missing-syncthreads"
    for f in races:
        _in_repo(f, "kernels/defects/")
        assert " vs " in f.message  # both sides of the race


def test_float4_tail_overread_is_an_invalid_global_read():
    recs, fs = _findings("overread_memcheck.xml", "memcheck")
    reads = [r for r in recs if r.kind == "InvalidRead"]
    assert reads and {r.space for r in reads} == {"global"}
    assert all(r.size for r in reads)
    for f in _errors(fs, "InvalidRead"):
        _in_repo(f, "kernels/defects/")


def test_divergent_syncthreads_is_a_sync_hazard():
    _, fs = _findings("divergent_synccheck.xml", "synccheck")
    hazards = _errors(fs, "SyncHazard")
    assert hazards
    for f in hazards:
        _in_repo(f, "kernels/defects/")


@pytest.mark.skipif(not (DATA / "uninit_initcheck.xml").exists(),
                    reason="optional fixture uninit_initcheck.xml not captured: kernels/defects/cuda/defects.py has "
                    "no defect-uninitialized-smem-read (CAPTURE.md says so)")
def test_uninitialized_read_records_are_initcheck_records():
    recs, fs = _findings("uninit_initcheck.xml", "initcheck")
    if not recs:
        pytest.skip("initcheck checks global memory only: it recorded nothing for the shared-memory defect "
                    "(see CAPTURE.md)")
    assert {r.kind for r in recs} <= {"UninitializedGlobalRead", "UninitializedGlobalAccess"}
    for f in _errors(fs, "Uninitialized"):
        _in_repo(f, "kernels/defects/")


def test_capture_record_names_version_gpu_and_commit():
    text = (DATA / "CAPTURE.md").read_text()
    for what in ("compute-sanitizer", "Version ", "GPU, driver:", "commit:", "| wall s |"):
        assert what in text
