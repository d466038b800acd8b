"""The defect catalogue (kernels/defects) is well-formed, invisible to `verifier check kernels/`,
and its CUDA sources compile for sm_90 with every entry its launches use."""
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

from verifier.errors import SpecError
from verifier.results.findings import CHECK_CLASSES

ROOT = Path(__file__).resolve().parents[1]


def _matrix():
    if "kernel_defect_matrix" not in sys.modules:
        spec = importlib.util.spec_from_file_location("kernel_defect_matrix", ROOT / "kernels/defects/matrix.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["kernel_defect_matrix"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["kernel_defect_matrix"]


@pytest.fixture(scope="module")
def entries():
    return _matrix().load_entries()


def test_every_entry_is_well_formed(entries):
    assert len(entries) >= 15
    names = {e.name for e in entries}
    for e in entries:
        assert e.caught_by in CHECK_CLASSES
        assert e.device in ("cpu", "gpu")
        assert e.twin_spec.name == e.twin and e.twin not in names
        assert e.spec.op == e.twin_spec.op, f"{e.name} and its twin {e.twin} compute different ops"
        assert e.pitfall and e.exposing_input


def test_cpu_value_defects_name_a_catalogue_case(entries):
    """The suite runs a CPU defect's exposing input alone; it must be a case the battery knows."""
    m = _matrix()
    for e in entries:
        if e.device == "cpu" and e.caught_by not in ("resources", "determinism", "refusal", "build", "static"):
            assert e.exposing_input in m.case_names(e.spec), f"{e.name}: {e.exposing_input!r} is not a case"


def test_defects_are_not_picked_up_by_the_main_job():
    from verifier.declare.registry import find_spec_files

    files = find_spec_files([str(ROOT / "kernels")])
    assert not [f for f in files if "defects" in f.parts], "kernels/defects must stay out of `verifier check kernels/`"


def test_malformed_entries_are_reported_together(tmp_path):
    bad = tmp_path / "defects.py"
    bad.write_text(textwrap.dedent('''
        from verifier.spec import CallableKernel, dtypes
        def fn(i, o, p, d):
            o["y"].copy_(i["x"])
        KERNELS = [CallableKernel(name="d1", op="softmax", fn=fn, dtypes=[dtypes("f32")]),
                   CallableKernel(name="d2", op="softmax", fn=fn, dtypes=[dtypes("f32")])]
        DEFECTS = {
            "d1": {"caught_by": "vibes", "twin": "triton-softmax", "pitfall": "p", "exposing_input": "d1",
                   "device": "cpu"},
            "d2": {"caught_by": "value", "twin": "no-such-kernel", "pitfall": "p", "exposing_input": "d1",
                   "device": "cpu"},
            "d3": {"caught_by": "value"},
        }
    '''))
    with pytest.raises(SpecError) as e:
        _matrix().load_entries(files=[bad])
    msg = str(e.value.message)
    assert "vibes" in msg and "no-such-kernel" in msg and "d3" in msg


def test_cuda_defect_sources_compile_for_sm90(entries):
    from verifier.toolchain.nvcc import compile_cubin
    from verifier.errors import ToolMissing
    from verifier.launch.cuda import launches_for

    by_source: dict = {}
    for e in entries:
        for spec in (e.spec, e.twin_spec):
            if spec.kind == "cuda" and "defects" in spec.source_path().parts:
                by_source.setdefault(spec.source_path().resolve(), {})[spec.name] = spec
    assert set(by_source) == {p.resolve() for p in (ROOT / "kernels/defects/cuda").glob("*.cu")}
    for src, specs in sorted(by_source.items()):
        try:
            res = compile_cubin(src, arch="sm_90")
        except ToolMissing as err:
            pytest.skip(f"nvcc not available: {err.message}")
        for spec in specs.values():
            for dt in spec.dtypes:
                N = next(n for n in (1024, 1000, 32) if spec.check_supported(4, n, dt) is None)
                for launch in launches_for(spec, 4, N, dt, spec.op_params()):
                    assert launch.entry in res.resources, f"{spec.name}: entry {launch.entry} not in {src.name}"


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_build_time_defects_are_judged_without_a_launch(monkeypatch, device):
    """A static/resources defect is decided by ptxas and the PTX; on a GPU the matrix must not launch it (the
    inactive-lanes shuffle hangs there until the kernel timeout), while a launch-time class keeps the device."""
    m = _matrix()
    seen = {}

    class _Report:
        verdict, findings, error = "fail", [], None

    def fake_check(spec, opts):
        seen[spec.name] = opts.device
        return _Report()

    monkeypatch.setattr(m, "_check", fake_check)
    by_name = {e.name: e for e in m.load_entries()}
    m.run_defect(by_name["defect-shuffle-inactive-lanes"], device)
    m.run_defect(by_name["defect-spill-undeclared"], device)
    m.run_defect(by_name["defect-missing-syncthreads"], device)
    assert seen[by_name["defect-shuffle-inactive-lanes"].spec.name] == "cpu"
    assert seen[by_name["defect-spill-undeclared"].spec.name] == "cpu"
    assert seen[by_name["defect-missing-syncthreads"].spec.name] == device


def test_sanitized_checks_run_each_tool_once(monkeypatch):
    """A sanitizer defect runs only its declared tool; a twin's four tools run once, with its first exposing
    case at budget 'ci' (every dtype), not again for every case (the tools launch their own tail shapes)."""
    m = _matrix()
    calls = []

    class _Report:
        verdict, findings, error = "pass", [], None

    def fake_check(spec, opts, isolate=None):
        calls.append(opts)
        return _Report()

    monkeypatch.setattr(m, "_check", fake_check)
    by_name = {e.name: e for e in m.load_entries()}
    race = by_name["defect-missing-syncthreads"]
    m.run_defect(race, "cuda")
    assert [(o.sanitize, o.sanitize_tools) for o in calls] == [(True, ("racecheck",))]

    calls.clear()
    twin_entries = [e for e in by_name.values() if e.twin == race.twin]
    cases = [e.exposing_input for e in twin_entries] + ["normal_small", "d7_below_warp"]
    m.run_twin(race.twin_spec, cases, "cuda", sanitize=True, whole_battery=True)
    sanitized = [o for o in calls if o.sanitize]
    assert len(calls) >= 3 and len(sanitized) == 1
    assert sanitized[0].case is not None and sanitized[0].budget == "ci" and sanitized[0].sanitize_tools is None

    calls.clear()  # no catalogue case: the whole battery carries the sanitizer
    m.run_twin(race.twin_spec, ["determinism probe"], "cuda", sanitize=True, whole_battery=True)
    assert [(o.case, o.sanitize) for o in calls] == [(None, True)]
