"""tools/detection_table.py render: measured rows, pending GPU rows with the command, bad input -> exit 2."""
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("detection_table_tool", ROOT / "tools" / "detection_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _battery(defects, twins):
    return {"device": "cpu", "budget": "ci", "seed": 0, "sanitize": False, "defects": defects, "twins": twins}


def test_render_reports_what_was_measured_and_what_is_pending(tmp_path):
    tool = _tool()
    hit = {"classes": ["invariant", "nan-inf"], "caught": True}
    miss = {"classes": ["value"], "caught": False}
    battery = _battery({"defect-triton-softmax-masked-row-zeros": hit, "defect-triton-softmax-no-max-sub": miss,
                        "defect-missing-syncthreads": {"skipped": "needs a GPU"}},
                       {"triton-softmax": {"verdict": "pass", "classes": []}})
    ac = {"device": "cpu", "defects": {"defect-triton-softmax-masked-row-zeros": {
        "cells": {"f32 4x1024": {"result": "missed"}, "f32 2x152064": {"result": "refused"}}}},
        "twins": {"triton-softmax": {"f32 4x1024": {"result": "missed"}}}}
    text = tool.render([battery], [ac])
    row = next(l for l in text.splitlines() if "`defect-triton-softmax-masked-row-zeros`" in l)
    assert "**nan-inf** (also: invariant) [cpu]" in row and "**no** (missed on all 1 runs, cpu)" in row
    assert "`triton-softmax` (pass)" in row
    row = next(l for l in text.splitlines() if "`defect-triton-softmax-no-max-sub`" in l)
    assert "MISSED nan-inf" in row
    row = next(l for l in text.splitlines() if "`defect-missing-syncthreads`" in l)
    assert "not yet run on GPU" in row
    assert "--device cuda --sanitize" in text


def test_lint_column_shows_the_classes_and_the_twin(tmp_path):
    tool = _tool()
    battery = _battery({"defect-missing-syncthreads": {"skipped": "needs a GPU"}}, {})
    lint = {"arches": ["sm_80", "sm_90"], "nvcc": "release 13.0", "commit": "abc",
            "defects": {"defect-missing-syncthreads": {"errors": ["shared-race"], "warnings": [], "findings": 1},
                        "defect-divergent-syncthreads": {"errors": [], "warnings": [], "findings": 0}},
            "twins": {"cuda-rmsnorm-block": {"errors": [], "warnings": [], "findings": 0},
                      "cuda-rmsnorm-tree": {"errors": ["shared-race"], "warnings": [], "findings": 1}}}
    text = tool.render([battery], [], [lint])
    row = next(l for l in text.splitlines() if "`defect-missing-syncthreads`" in l)
    assert "**shared-race**; twin clean" in row
    row = next(l for l in text.splitlines() if "`defect-divergent-syncthreads`" in l)
    assert "no finding; twin 1 finding(s): shared-race" in row
    row = next(l for l in text.splitlines() if "`defect-triton-softmax-no-max-sub`" in l)
    assert "n/a (not CUDA)" in row
    assert "lint (sm_80, sm_90, release 13.0, commit abc)" in text


def test_bad_input_file_is_a_usage_error(tmp_path, capsys):
    tool = _tool()
    bad = tmp_path / "b.json"
    bad.write_text("{not json")
    rc = tool.main(["render", "--battery", str(bad), "--out", str(tmp_path / "o.md")])
    assert rc == 2
    assert "cannot read battery file" in capsys.readouterr().err
    assert tool.main(["render"]) == 2  # missing --battery / --out


RESULTS = Path(__file__).resolve().parents[1] / "kernels" / "defects" / "results"
# The defects of issue #25 that only a GPU shows: their rows come from tools/gpu_check_inputs25.sh, whose step
# `detection` writes detection-gpu-inputs.json and assert-close-gpu-inputs.json; until those are committed here the
# table lists exactly these as not yet run on a GPU.
GPU_INPUTS = ("detection-gpu-inputs.json", "assert-close-gpu-inputs.json")
PENDING_GPU = {"defect-cuda-rmsnorm-int32-row-offset", "defect-cuda-rmsnorm-ignores-row-stride",
               "defect-cuda-fused-add-rmsnorm-vec-unaligned", "defect-cuda-ce-neg-log-softmax",
               "defect-triton-rmsnorm-int32-row-offset"}
# Added since the last GPU run (issue #37, norm variants): pending until the integrator's H200 run is committed.
PENDING_NEW = {"defect-cuda-row-amax-fmaxf", "defect-cuda-row-amax-split-race"}
PENDING_NEW |= {"defect-cuda-argmax-lane-drops-index", "defect-cuda-argmax-half-compare"}  # row_argmax (greedy)
_HAVE = [n for n in GPU_INPUTS if (Path(__file__).resolve().parents[1] / "kernels" / "defects" / "results" / n).exists()]
# Issue #36's defects of the large family that launch (past 2^32, a stride >= 2^31; rows on grid.y is caught by the
# build's launch check on any machine): their rows come from
# tools/gpu_check_issue36.sh, step `detection`, which writes detection-gpu-large36.json; until it is committed the
# table lists exactly these as not yet run on a GPU.
GPU_LARGE = "detection-gpu-large36.json"
PENDING_LARGE = {"defect-cuda-rmsnorm-unsigned-row-offset", "defect-cuda-rmsnorm-int32-row-stride"}
_HAVE_LARGE = (Path(__file__).resolve().parents[1] / "kernels" / "defects" / "results" / GPU_LARGE).exists()
# Issues #36 / #37's GPU-only defects (tools/gpu_check_issue37.sh, step `detection`, H200 run of 2026-12-05).
GPU_37 = ("detection-gpu-37.json", "assert-close-gpu-37.json")
_HAVE_37 = [n for n in GPU_37 if (RESULTS / n).exists()]
# The order docs/detection-matrix.md was rendered with: per defect, the first file that ran it (GPU runs first).
RENDER_ARGS = (["detection-gpu.json", "detection-gpu-triton.json"] + [n for n in _HAVE if n.startswith("detection")]
               + ([GPU_LARGE] if _HAVE_LARGE else []) + [n for n in _HAVE_37 if n.startswith("detection")]
               + ["detection-cpu.json"],
               ["assert-close-gpu.json"] + [n for n in _HAVE if n.startswith("assert")]
               + [n for n in _HAVE_37 if n.startswith("assert")] + ["assert-close-cpu.json"],
               ["lint-cpu.json"])


def test_committed_table_is_the_rendering_of_the_committed_results():
    tool = _tool()
    load = lambda names: [json.loads((RESULTS / n).read_text()) for n in names]
    text = tool.render(load(RENDER_ARGS[0]), load(RENDER_ARGS[1]), load(RENDER_ARGS[2]))
    assert (RESULTS.parents[2] / "docs" / "detection-matrix.md").read_text() == text, (
        "docs/detection-matrix.md is stale: re-render it with tools/detection_table.py render "
        + " ".join(f"--battery kernels/defects/results/{n}" for n in RENDER_ARGS[0]) + " "
        + " ".join(f"--assert-close kernels/defects/results/{n}" for n in RENDER_ARGS[1]) + " "
        + " ".join(f"--lint kernels/defects/results/{n}" for n in RENDER_ARGS[2]) + " --out docs/detection-matrix.md")
    pending = ((PENDING_GPU if len(_HAVE) < len(GPU_INPUTS) else set()) | (set() if _HAVE_LARGE else PENDING_LARGE)
               | PENDING_NEW)
    pending = {n for n in pending if n not in json.dumps(load(RENDER_ARGS[0][:-1]))}  # those a GPU file has ran
    if not pending:
        assert "Not yet run on a GPU" not in text  # every defect has a measured GPU row
    else:
        import re

        listed = re.search(r"Not yet run on a GPU \(\d+\): (.*)\.\n", text).group(1)
        assert set(re.findall(r"`([^`]+)`", listed)) == pending


def test_committed_class_table_is_the_rendering_of_the_committed_results():
    tool = _tool()
    lint = json.loads((RESULTS / "lint-cpu.json").read_text())
    san = json.loads((RESULTS / "sanitize-sync-defects-h200.json").read_text())
    text = tool.render_classes(lint, san, tool.SANITIZE_RUN)
    assert (RESULTS.parents[2] / "docs" / "static-vs-sanitizers.md").read_text() == text, (
        "docs/static-vs-sanitizers.md is stale: re-render it with tools/detection_table.py classes --lint "
        "kernels/defects/results/lint-cpu.json --sanitize kernels/defects/results/sanitize-sync-defects-h200.json "
        "--out docs/static-vs-sanitizers.md")
    assert san["environment"]["gpu"] == "NVIDIA H200" and san["options"]["device"] == "cuda"
    # every sync/race class is caught by lint, and at least one of them by no sanitizer tool
    rows = [[c.strip() for c in l.strip("|").split(" | ")] for l in text.splitlines() if "| `defect-" in l]
    assert len(rows) == len(tool.DEFECT_CLASSES)
    assert all(r[2].startswith("**caught**") for r in rows)  # lint column
    assert any(r[3:] == ["missed"] * 3 for r in rows)  # racecheck, synccheck, memcheck


def test_runs_line_names_defects_run_on_their_exposing_case_alone():
    """A GPU run at level quick checks a defect whose exposing case the quick battery lacks (the large-index case,
    the strided rows) on that case alone: the Runs line says so instead of 'whole battery'."""
    tool = _tool()
    battery = _battery({"defect-triton-softmax-no-max-sub": {"classes": ["nan-inf"], "caught": True,
                                                             "case": "whole battery (ci)"},
                        "defect-triton-softmax-masked-row-zeros": {"classes": ["nan-inf"], "caught": True,
                                                                   "case": "fully_masked_rows"}},
                       {"triton-softmax": {"verdict": "pass", "classes": []}})
    runs = next(l for l in tool.render([battery], []).splitlines() if l.startswith("Runs: "))
    assert "whole battery at budget ci, except `defect-triton-softmax-masked-row-zeros`: their exposing case alone;" \
        in runs and "no-max-sub" not in runs
