"""Recorded H200 sanitizer XML (tests/data/sanitizer/lint-defects-h200/, run of 2026-12-01, see
docs/gpu-runs/2026-12-01-h200-lint.md): racecheck, synccheck and memcheck wrote no record for two defects that
`verifier lint` catches without a GPU."""
from pathlib import Path

import pytest

from verifier.toolchain.nvcc import nvcc_version
from verifier.sanitizer.xmlparse import parse

DATA = Path(__file__).parent / "data" / "sanitizer" / "lint-defects-h200"
MISSED = ("defect-early-exit-before-barrier", "defect-global-scratch-shared-by-blocks")


@pytest.mark.parametrize("defect", MISSED)
@pytest.mark.parametrize("tool", ("racecheck", "synccheck", "memcheck"))
def test_sanitizers_wrote_no_record(defect, tool):
    parsed = parse(str(DATA / f"{defect}.f32.{tool}.xml"), tool)
    assert parsed.complete and parsed.records == []


@pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
@pytest.mark.parametrize("defect, cls", list(zip(MISSED, ("divergent-barrier", "global-race"))))
def test_lint_catches_what_they_missed(defect, cls):
    from verifier.results.kernel import KernelReport
    from verifier.gpu.probe import CPU_BUILD_ARCHES
    from verifier.lint.step import lint_spec
    from verifier.declare.registry import load_spec_file

    spec = next(s for s in load_spec_file(str(Path(__file__).resolve().parents[1] / "kernels/defects/cuda/defects.py"))
                if s.name == defect)
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
    assert any(f.severity == "error" and f.message.startswith(cls + ":") for f in report.findings)
