"""Where SARIF and JUnit place a kernel (issue 35, item 9): at the line that constructed it, also in a list
comprehension or a helper function (not line 1); and a non-ASCII source path comes out as itself in text and as a
percent-encoded URI that resolves to the file in SARIF."""
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from verifier.cli import main
from verifier.declare.registry import load_spec_file
from verifier.lint.ptx import ptx_string
from verifier.report import render
from verifier.results.findings import Finding
from verifier.results.kernel import KernelReport
from verifier.results.run import Result
from verifier.results.serialize import from_dict
from verifier.toolchain.nvcc import nvcc_version

SPEC = '''import torch
from verifier.spec import CallableKernel, dtypes


def fn(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))


def make(suffix):
    return CallableKernel(name=f"made-{suffix}", op="softmax", fn=fn, dtypes=[dtypes("f32")])


KERNELS = [CallableKernel(name=f"comp-{i}", op="softmax", fn=fn, dtypes=[dtypes("f32")])
           for i in range(2)] + [
    make("a"),
]
'''
LINES = {"comp-0": 13, "comp-1": 13, "made-a": 10}


@pytest.fixture
def result(tmp_path):
    spec_file = tmp_path / "k_spec.py"
    spec_file.write_text(SPEC)
    reports = []
    for spec in load_spec_file(spec_file):
        r = KernelReport(spec=spec, device="cpu")
        r.add(Finding("value", "y: 1/4 elements over their ULP budget", kernel=spec.name, dtype="f32",
                      input="normal_small", shape=(4, 128)))
        reports.append(r)
    return Result(reports=reports, source_root=str(tmp_path))


def _sarif_lines(result) -> dict:
    doc = json.loads(render(result, "sarif"))
    return {r["properties"]["kernel"]: r["locations"][0]["physicalLocation"]["region"]["startLine"]
            for r in doc["runs"][0]["results"]}


def test_specs_remember_the_line_that_built_them(result):
    assert {r.spec.name: r.spec.line for r in result.reports} == LINES


def test_sarif_places_comprehension_and_helper_kernels_at_their_line(result):
    assert _sarif_lines(result) == LINES


def test_junit_testcases_carry_the_declaring_line(result):
    top = ET.fromstring(render(result, "junit"))
    for suite in top.findall("testsuite"):
        for tc in suite.findall("testcase"):
            assert (tc.get("file"), tc.get("line")) == ("k_spec.py", str(LINES[suite.get("name")]))


def test_a_saved_result_keeps_the_line(result):
    data = json.loads(render(result, "json"))
    assert {k["name"]: k["line"] for k in data["kernels"]} == LINES
    saved = from_dict(data)
    saved.source_root = result.source_root
    assert _sarif_lines(saved) == LINES


def test_ptx_file_strings_are_unescaped():
    assert ptx_string(r"/src/k\303\251/race.cu") == "/src/ké/race.cu"
    assert ptx_string(r'/src/a\\b\"c.cu') == '/src/a\\b"c.cu'
    assert ptx_string("/src/plain.cu") == "/src/plain.cu"


RACE = r'''extern "C" __global__ void race_f32(const float* x, float* y, int M, int N) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[(long long)blockIdx.x * N + (t % N)];
    float v = s[(t + 1) % 256];
    y[(long long)blockIdx.x * N + (t % N)] = v;
}
'''
RACE_SPEC = '''from verifier.spec import CudaKernel, Launch, dtypes


def _l(M, N, dt, params):
    return [Launch(entry="race_f32", grid=(M,), block=(256,), args=("x", "y", "M", "N"))]


KERNELS = [CudaKernel(name="race", op="softmax", source="race.cu", dtypes=[dtypes("f32")], launches=_l)]
'''


@pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
def test_a_non_ascii_source_path_is_shown_as_itself_and_its_sarif_uri_resolves(tmp_path, monkeypatch, capsys):
    d = tmp_path / "ké"
    d.mkdir()
    (d / "race.cu").write_text(RACE)
    (d / "k_spec.py").write_text(RACE_SPEC)
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "ké/k_spec.py", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "at ké/race.cu:4" in out and "\\303" not in out
    assert main(["lint", "ké/k_spec.py", "--no-progress", "--format", "sarif"]) == 1
    run = json.loads(capsys.readouterr().out)["runs"][0]
    (res,) = run["results"]
    art = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art["uri"] == "k%C3%A9/race.cu" and art["uriBaseId"] == "SRCROOT"
    base = urlparse(run["originalUriBaseIds"]["SRCROOT"]["uri"])
    assert base.scheme == "file"
    assert (Path(unquote(base.path)) / unquote(art["uri"])).read_text() == RACE
