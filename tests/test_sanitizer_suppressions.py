"""Sanitizer suppressions: matching, the required reason, unused entries, the checked-in file."""
from __future__ import annotations

from pathlib import Path

import pytest

from verifier.errors import UsageError
from verifier.results.findings import Finding
from verifier.sanitizer import suppressions as S

REPO = Path(__file__).resolve().parents[1]


def _race(kernel="cuda-softmax-s3", file="kernels/cuda/softmax.cu", line=120):
    return Finding("racecheck", "RaceHazard WAR: error-level shared-memory race in k: Read at ...", kernel=kernel,
                   file=file, line=line)


def _entries(toml: str, tmp_path):
    p = tmp_path / S.FILE_NAME
    p.write_text(toml)
    return S.load(p)


def test_matching_finding_becomes_info_with_reason_and_others_stay(tmp_path):
    entries = _entries('[[suppress]]\ntool = "racecheck"\nkernel = "cuda-softmax-*"\n'
                       'file = "kernels/cuda/softmax.cu:120"\nkind = "RaceHazard"\nreason = "benign: same value"\n', tmp_path)
    hit, other_line, other_kernel = _race(), _race(line=121), _race(kernel="cuda-rmsnorm")
    out = S.apply(entries, [hit, other_line, other_kernel])
    assert out[0].severity == "info" and out[0].message.endswith("suppressed: benign: same value")
    assert out[0].message.startswith("RaceHazard")  # kind stays first: unused() still sees the match
    assert out[1] == other_line and out[2] == other_kernel
    assert S.unused(entries, out) == []


def test_file_only_entry_and_kind_and_tool_must_match(tmp_path):
    entries = _entries('[[suppress]]\ntool = "racecheck"\nfile = "kernels/cuda/*.cu"\nreason = "r"\n', tmp_path)
    assert S.apply(entries, [_race(line=7)])[0].severity == "info"
    mem = Finding("memcheck", "InvalidRead [out of bounds]: ...", kernel="k", file="kernels/cuda/softmax.cu", line=7)
    assert S.apply(entries, [mem]) == [mem]
    by_kind = _entries('[[suppress]]\ntool = "racecheck"\nkind = "InvalidRead"\nreason = "r"\n', tmp_path)
    assert S.apply(by_kind, [_race()]) == [_race()]


def test_unused_entries_are_reported(tmp_path):
    entries = _entries('[[suppress]]\ntool = "synccheck"\nkernel = "gone-*"\nreason = "old"\n'
                       '[[suppress]]\ntool = "racecheck"\nkernel = "cuda-*"\nreason = "used"\n', tmp_path)
    (stale,) = S.unused(entries, [_race()])
    assert stale.kernel == "gone-*" and "entry #1" in stale.describe() and "(old)" in stale.describe()


@pytest.mark.parametrize("body, message", [
    ('tool = "racecheck"\nkernel = "k"\n', "has no reason"),
    ('tool = "racecheck"\nkernel = "k"\nreason = "  "\n', "has no reason"),
    ('tool = "leakcheck"\nkernel = "k"\nreason = "r"\n', "tool is 'leakcheck'"),
    ('tool = "racecheck"\nreason = "r"\n', "would suppress every racecheck finding"),
    ('tool = "racecheck"\nkernal = "k"\nreason = "r"\n', "unknown key(s) ['kernal']"),
    ('tool = "racecheck"\nfile = "a.cu:x"\nreason = "r"\n', "bad line number"),
    ('tool = "racecheck"\nkernel = 3\nreason = "r"\n', "kernel must be a string"),
])
def test_bad_entries_are_usage_errors_naming_the_entry(tmp_path, body, message):
    with pytest.raises(UsageError) as e:
        _entries("[[suppress]]\n" + body, tmp_path)
    assert message in e.value.message and "entry #1" in e.value.message and e.value.fix


def test_invalid_toml_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not valid TOML"):
        _entries("[[suppress]\n", tmp_path)


def test_checked_in_file_loads_and_is_found_from_a_spec_directory():
    assert S.find_file(REPO / "kernels" / "cuda") == REPO / S.FILE_NAME
    S.load(REPO / S.FILE_NAME)  # documented, valid; entries (if any) carry reasons


def test_find_file_stops_at_the_repository_root(tmp_path):
    (tmp_path / S.FILE_NAME).write_text("")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "kernels").mkdir()
    assert S.find_file(repo / "kernels") is None
