"""Undeclared resource facts speak (issue #13): a spill or stack use that no Expectations limit covers is a
'resources' finding of severity warning (table 'warn', JSON severity, SARIF/Markdown warning at the kernel's
entry, counted in the summary); it does not change the exit code unless --strict; a declared limit that is
exceeded stays an error. The spilling CUDA kernel is built here with the local nvcc (ptxas -v)."""
import json
from pathlib import Path

import pytest

from verifier import cli
from verifier.results.kernel import KernelReport
from verifier.results.options import Options
from verifier.battery.build import check_build, triton_resources
from verifier.toolchain.ptxas import KernelResources, entry_line, undeclared_usage
from verifier.declare.registry import load_spec_file
from verifier.report import render
from verifier.results.run import Result
from verifier.spec import Expectations, register_resident

ROOT = Path(__file__).resolve().parents[1]
DEFECTS = ROOT / "kernels" / "defects" / "cuda" / "defects.py"
SOURCE = ROOT / "kernels" / "defects" / "cuda" / "resource_defects.cu"
CPU = Options(level="quick", device="cpu")


def _res(spill=0, stack=0):
    return KernelResources(name="k", demangled="k", demangled_with="not-mangled", arch="sm_90", is_entry=True,
                           registers=32, spill_store_bytes=spill, stack_frame_bytes=stack)


def test_undeclared_spill_and_stack_are_reported_declared_ones_are_not():
    assert undeclared_usage(_res(), Expectations()) == []
    [w] = undeclared_usage(_res(spill=208, stack=88), Expectations())
    assert "spills 208 bytes" in w and "88 bytes of stack" in w and "declares no limit" in w
    assert undeclared_usage(_res(spill=208, stack=88), Expectations(max_spill_bytes=512, max_stack_bytes=512)) == []
    [w] = undeclared_usage(_res(stack=88), Expectations(max_spill_bytes=0))  # stack still undeclared
    assert "88 bytes of stack" in w and "spills" not in w
    assert "local array" in w and "registers" not in w  # no spill: not a row that left the registers (ggml topk-moe)
    [w] = undeclared_usage(_res(spill=208), Expectations())
    assert "row does not stay in registers" in w
    assert undeclared_usage(_res(spill=208, stack=88), register_resident()) == []  # an error elsewhere, not a warning


def test_entry_line_finds_the_global_function():
    file, line = entry_line(SOURCE, "rmsnorm_regs_spill_f32")
    assert Path(file) == SOURCE.resolve()
    assert "rmsnorm_regs_spill_f32(" in SOURCE.read_text().splitlines()[line - 1]
    assert entry_line(SOURCE, "no_such_kernel") is None


@pytest.fixture(scope="module")
def spill_reports():

    specs = {k.name: k for k in load_spec_file(DEFECTS)}
    out = {}
    for name in ("defect-spill-undeclared", "defect-spill-register-resident"):
        spec = specs[name]
        r = check_build(spec, CPU, spec.dtypes)
        if any(v.skipped for (_, c), v in r.cells.items() if c == "build"):
            pytest.skip("nvcc not available: " + next(iter(r.cells.values())))
        out[name] = r
    return out


def test_spill_with_default_expectations_is_a_warning(spill_reports):
    r = spill_reports["defect-spill-undeclared"]
    warned = [f for f in r.findings if f.check == "resources"]
    assert warned and all(f.severity == "warning" for f in warned)
    assert {m.split("]")[0] for m in (f.message for f in warned)} == {"[sm_80", "[sm_90"}
    assert all("spills" in f.message and "declares no limit" in f.message for f in warned)
    assert all(Path(f.file) == SOURCE.resolve() and f.line for f in warned)  # at the kernel's entry
    assert r.verdict == "pass"
    res = Result(reports=[r], options={})
    assert res.summary()["warnings"] == len(warned) and res.exit_code() == 0 and res.exit_code(strict=True) == 1
    table = render(res, "text")
    row = next(l for l in table.splitlines() if l.startswith("defect-spill-undeclared"))
    assert row.split()[3] == "warn", row  # kernel, dtype, build, resource
    assert f"({len(warned)} of them warnings)" in table and "[resources warning]" in table
    data = json.loads(render(res, "json"))
    assert {f["severity"] for f in data["kernels"][0]["findings"]} == {"warning"}
    assert data["summary"]["warnings"] == len(warned)
    sarif = json.loads(render(res, "sarif"))["runs"][0]["results"]
    assert {x["level"] for x in sarif} == {"warning"}
    assert {x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for x in sarif} == \
        {"kernels/defects/cuda/resource_defects.cu"}
    junit = render(res, "junit")
    assert "<failure" not in junit and "warning:" in junit and "spills" in junit  # shown, not failed
    md = render(res, "markdown")
    assert "⚠️ **warning**" in md and "⚠️ warn" in md and "rmsnorm_regs_spill_f32(" in md


def test_the_same_spill_declared_register_resident_is_an_error(spill_reports):
    r = spill_reports["defect-spill-register-resident"]
    assert r.verdict == "fail"
    errs = [f for f in r.findings if f.check == "resources"]
    assert errs and all(f.severity == "error" for f in errs)
    assert any("declared register-resident (max_spill_bytes=0)" in f.message for f in errs)
    assert Result(reports=[r]).exit_code() == 1


def test_cli_exit_code_changes_only_with_strict(spill_reports, capsys):
    args = ["check", str(DEFECTS), "--kernel", "defect-spill-undeclared", "--device", "cpu", "--no-progress",
            "--budget", "quick"]
    assert cli.main(args) == 0
    out, err = capsys.readouterr()
    assert " warn " in out and "warnings; --strict fails on them" in err
    assert cli.main(args + ["--strict"]) == 1
    capsys.readouterr()


def test_triton_local_memory_without_a_declared_limit_is_a_warning(monkeypatch):
    from verifier.launch import triton as triton_runner
    from verifier.spec import TritonKernel, dtypes

    def fake(spec, M, N, dt, params, device):
        return {"kernels": [{"name": "_softmax_kernel", "registers": 255, "local_bytes": 96, "shared_bytes": 0}]}

    monkeypatch.setattr(triton_runner, "compiled_resources", fake)
    for expectations, severity in ((Expectations(), "warning"), (register_resident(), "error")):
        spec = TritonKernel(name="t", op="softmax", module="m.py", launcher="launch", dtypes=[dtypes("f32")],
                            expectations=expectations)
        r = KernelReport(spec=spec, device="cuda")
        triton_resources(spec, Options(device="cuda"), r, spec.dtypes)
        found = {f.severity for f in r.findings if f.check == "resources"}
        assert found == {severity}, (expectations, [f.message for f in r.findings])
        if severity == "warning":
            assert any("96 bytes of local memory" in f.message for f in r.findings)
            assert r.verdict == "pass"
