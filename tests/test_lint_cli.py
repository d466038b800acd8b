"""`verifier lint` (exit codes and formats as `verifier check`) and the battery's check class `static`."""
import json
from pathlib import Path

import pytest

from verifier.toolchain.nvcc import nvcc_version
from verifier.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEFECTS = str(ROOT / "kernels/defects/cuda/defects.py")
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")


def test_a_defect_exits_1_with_both_lines(capsys):
    assert main(["lint", DEFECTS, "--kernel", "defect-missing-syncthreads", "--no-progress"]) == 1
    out, err = capsys.readouterr()
    assert "defect-missing-syncthreads" in out and "FAIL" in out
    assert "kernels/defects/cuda/sync_defects.cu:23" in out and "read at kernels/defects/cuda/sync_defects.cu:25" in out
    assert "1 fail" in err and "(sm_80, sm_90)" in err


def test_a_clean_kernel_exits_0(capsys):
    assert main(["lint", DEFECTS, "--kernel", "cuda-rmsnorm-tree", "--no-progress"]) == 0
    assert "0 findings (0 warnings)" in capsys.readouterr().err


def test_json_report_has_static_findings_with_repo_relative_files(capsys):
    assert main(["lint", DEFECTS, "--kernel", "defect-global-scratch-shared-by-blocks", "--format", "json",
                 "--no-progress"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (k,) = doc["kernels"]
    (f,) = k["findings"]
    assert f["check"] == "static" and f["severity"] == "error"
    assert f["file"] == "kernels/defects/cuda/lint_defects.cu" and f["line"] == 84
    assert f["message"].startswith("global-race:")
    assert k["checks"]["f32"]["static"] == "FAIL"


def test_sarif_has_a_static_rule(capsys):
    main(["lint", DEFECTS, "--kernel", "defect-shuffle-inactive-lanes", "--format", "sarif", "--no-progress"])
    doc = json.loads(capsys.readouterr().out)
    results = doc["runs"][0]["results"]
    assert results and all(r["ruleId"] == "verifier/static" for r in results)


def test_usage_errors_exit_2(capsys, tmp_path):
    assert main(["lint", DEFECTS, "--format", "yaml"]) == 2
    assert "--format 'yaml' is not a format" in capsys.readouterr().err
    assert main(["lint", str(tmp_path / "missing_spec.py")]) == 2


def test_nothing_to_lint_is_exit_4_nothing_checked(capsys):
    assert main(["lint", str(ROOT / "kernels/triton"), "--no-progress"]) == 4
    err = capsys.readouterr().err
    assert "nothing was linted (exit 4): no CUDA kernel among the" in err and "non-CUDA kernel(s) left out" in err
    assert "fix: verifier lint reads the PTX of CUDA sources" in err


def test_battery_runs_static_without_a_gpu():
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.declare.registry import load_spec_file

    specs = {s.name: s for s in load_spec_file(DEFECTS)}
    opts = Options(device="cpu", level="quick")
    ok = check_kernel(specs["cuda-rmsnorm-small"], opts)
    # static checks ran clean; the values could not be checked without a GPU: 'unchecked', never 'pass'
    assert ok.cells[("f32", "static")] == "pass" and ok.verdict == "unchecked"
    bad = check_kernel(specs["defect-early-exit-before-barrier"], opts)
    assert bad.cells[("f32", "static")] == "FAIL" and bad.verdict == "fail"
    assert {f.check for f in bad.findings} == {"static"}
    assert all(f.repro.startswith("verifier lint ") for f in bad.findings)


BAD_AND_GOOD = '''from verifier.spec import CudaKernel, Launch, dtypes


def broken(M, N, dt, params):
    raise RuntimeError("a bug in the spec's own launches")


def fine(M, N, dt, params):
    return [Launch(entry="rms_tree_ok_f32", grid=(M,), block=(256,), args=("x", "w", "y", "M", "N", "eps"))]


KERNELS = [CudaKernel(name="broken", op="rmsnorm", source="{src}", dtypes=[dtypes("f32")], launches=broken),
           CudaKernel(name="fine", op="rmsnorm", source="{src}", dtypes=[dtypes("f32")], launches=fine)]
'''


def test_a_spec_whose_launches_raise_is_that_kernels_error_the_others_are_linted(tmp_path, capsys):
    spec = tmp_path / "k_spec.py"
    spec.write_text(BAD_AND_GOOD.format(src=ROOT / "kernels/defects/cuda/sync_defects.cu"))
    assert main(["lint", str(spec), "--no-progress", "--format", "json"]) == 1
    kernels = {k["name"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert kernels["broken"]["verdict"] == "error" and kernels["broken"]["error_kind"] == "user"
    assert "a bug in the spec's own launches" in kernels["broken"]["error"]
    assert kernels["fine"]["checks"]["f32"]["static"] == "pass" and kernels["fine"]["verdict"] == "pass"
