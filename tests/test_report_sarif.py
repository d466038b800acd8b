"""SARIF 2.1.0: structure (the properties the schema and GitHub code scanning require), rules, levels,
locations and fingerprints; findings parsed from a real compute-sanitizer racecheck capture."""
import json
import shutil
from pathlib import Path

import pytest

from verifier.results.kernel import KernelReport
from verifier.results.findings import CHECK_CLASSES, Finding
from verifier.report import render
from verifier.results.run import Result
from verifier.results.serialize import from_dict
from verifier.spec import CallableKernel, dtypes

CAPTURES = Path(__file__).resolve().parents[2] / "shared" / "reference-captures" / "h200-2026-11-30"
SPEC_TEXT = 'from verifier.spec import CallableKernel\n\nKERNELS = [\n    CallableKernel(\n        name="k-softmax",\n' \
            '        op="softmax"),\n]\n'


def validate(doc: dict):
    """The SARIF 2.1.0 schema's required properties on the objects we write, plus GitHub's own needs."""
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(doc["runs"], list) and doc["runs"]
    for run in doc["runs"]:
        driver = run["tool"]["driver"]
        assert driver["name"] and driver["version"] and driver["informationUri"].startswith(("https://", "http://"))
        rule_ids = [r["id"] for r in driver["rules"]]
        assert len(set(rule_ids)) == len(rule_ids)
        for r in driver["rules"]:
            assert r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["text"]
        assert run["originalUriBaseIds"]["SRCROOT"]["uri"].startswith("file:///")
        assert run["originalUriBaseIds"]["SRCROOT"]["uri"].endswith("/")
        for res in run["results"]:
            assert res["ruleId"] == rule_ids[res["ruleIndex"]]
            assert res["message"]["text"]
            assert res["level"] in ("error", "warning", "note", "none")
            assert res["locations"]
            for loc in res["locations"]:
                phys = loc["physicalLocation"]
                uri = phys["artifactLocation"]["uri"]
                assert uri and not uri.startswith("/")
                assert phys["region"]["startLine"] >= 1 and isinstance(phys["region"]["startLine"], int)
            fp = res["partialFingerprints"]
            assert fp and all(isinstance(v, str) and v for v in fp.values())


def _spec(root: Path, name="k-softmax"):
    (root / "kernels").mkdir(exist_ok=True)
    spec_file = root / "kernels" / "k_spec.py"
    spec_file.write_text(SPEC_TEXT)
    return CallableKernel(name=name, op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32"), dtypes("bf16")],
                          origin=str(spec_file))


def _result(root: Path, *findings) -> Result:
    rep = KernelReport(spec=_spec(root), device="cuda")
    for f in findings:
        rep.add(f)
    return Result(reports=[rep], environment={"gpu": "H200"}, source_root=str(root))


def _sarif(result) -> dict:
    doc = json.loads(render(result, "sarif"))
    validate(doc)
    return doc


def race(line=42, message="Race condition: write at line 42, read at line 40 (2048 hazards)", dtype="f32", **kw):
    return Finding("racecheck", message, kernel="k-softmax", dtype=dtype, input="normal_small", shape=(4, 128),
                   file="kernels/cuda/softmax.cu", line=line, **kw)


def test_one_rule_per_check_class(tmp_path):
    rules = _sarif(_result(tmp_path))["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [f"verifier/{c}" for c in CHECK_CLASSES] + ["verifier/unchecked"]
    assert "barrier" in next(r for r in rules if r["id"] == "verifier/racecheck")["fullDescription"]["text"]


def test_a_sanitizer_finding_lands_at_its_file_and_line(tmp_path):
    res = _sarif(_result(tmp_path, race()))["runs"][0]["results"]
    assert len(res) == 1
    phys = res[0]["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"] == {"uri": "kernels/cuda/softmax.cu", "uriBaseId": "SRCROOT"}
    assert phys["region"] == {"startLine": 42}
    assert res[0]["ruleId"] == "verifier/racecheck" and res[0]["level"] == "error"
    assert "Race condition" in res[0]["message"]["text"] and "k-softmax" in res[0]["message"]["text"]


def test_an_absolute_path_inside_the_checkout_becomes_relative(tmp_path):
    f = Finding("memcheck", "Invalid __global__ write", file=str(tmp_path / "kernels" / "x.cu"), line=7)
    loc = _sarif(_result(tmp_path, f))["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "kernels/x.cu" and loc["region"]["startLine"] == 7


def test_a_finding_without_a_line_points_at_the_kernel_in_its_spec_file(tmp_path):
    f = Finding("value", "y: 3/512 elements over budget", dtype="bf16", input="normal_small")
    phys = _sarif(_result(tmp_path, f))["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == "kernels/k_spec.py"
    assert phys["region"]["startLine"] == 5  # the line of name="k-softmax"


def test_levels_follow_severity(tmp_path):
    fs = [race(), race(line=50, severity="warning"), Finding("resources", "12 spill bytes", severity="info")]
    levels = {r["partialFingerprints"]["kernelVerifierFinding/v1"]: r["level"]
              for r in _sarif(_result(tmp_path, *fs))["runs"][0]["results"]}
    assert sorted(levels.values()) == ["error", "note", "warning"]


def test_fingerprints_ignore_the_message_but_not_the_location(tmp_path):
    def fp(*fs):
        return [r["partialFingerprints"]["kernelVerifierFinding/v1"]
                for r in _sarif(_result(tmp_path, *fs))["runs"][0]["results"]]

    first = fp(race(message="Race condition (2048 hazards)"))
    assert fp(race(message="Race condition (2032 hazards)")) == first  # same race, other counts: same alert
    assert fp(race(line=43)) != first
    assert len(set(fp(race(), race(dtype="bf16")))) == 2  # one race per dtype variant: two alerts
    same_identity = fp(Finding("resources", "entry a spills"), Finding("resources", "entry b spills"))
    assert len(set(same_identity)) == 2  # numbered in order, so GitHub does not fold them into one alert


def test_saved_json_gives_the_same_sarif(tmp_path):
    result = _result(tmp_path, race(), Finding("value", "over budget", dtype="f32", input="zero_rows", score=3.0))
    saved = from_dict(json.loads(render(result, "json")))
    saved.source_root = result.source_root
    assert render(saved, "sarif") == render(result, "sarif")


def test_internal_errors_are_tool_notifications(tmp_path):
    result = _result(tmp_path)
    result.reports[0].error = "RuntimeError: boom"
    inv = _sarif(result)["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert "boom" in inv["toolExecutionNotifications"][0]["message"]["text"]


@pytest.mark.skipif(not CAPTURES.is_dir(), reason=f"reference captures not present at {CAPTURES}")
def test_sarif_from_a_real_racecheck_capture(tmp_path):
    xmlparse = pytest.importorskip("verifier.sanitizer.xmlparse", reason="sanitizer XML parser not written yet")
    (tmp_path / "csprobe").mkdir()
    shutil.copy(CAPTURES / "kern.cu", tmp_path / "csprobe" / "kern.cu")  # the capture names /src/csprobe/kern.cu
    parsed = xmlparse.parse(str(CAPTURES / "rc_race.xml"), "racecheck")
    assert parsed.complete and parsed.records
    findings = xmlparse.to_findings(parsed.records, xmlparse.SourceMap(tmp_path), kernel="k-softmax", dtype="f32")
    doc = _sarif(_result(tmp_path, *findings))
    res = doc["runs"][0]["results"]
    assert len(res) == len(findings) >= 1
    phys = res[0]["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == "csprobe/kern.cu"
    assert phys["region"]["startLine"] == 28  # the racing read in block_reduce_race
    assert res[0]["ruleId"] == "verifier/racecheck" and res[0]["level"] == "error"
    md = render(_result(tmp_path, *findings), "markdown")
    line28 = (tmp_path / "csprobe" / "kern.cu").read_text().splitlines()[27]
    assert f">28  {line28}" in md
