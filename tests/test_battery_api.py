"""The battery's single-step API (run_case, check_refusal, check_determinism, check_build, ...) that the
pytest plugin uses: each step judges like the whole battery (check_kernel) does."""
import shlex
import textwrap

import numpy as np
from hypothesis import given, settings

from verifier.inputs.cases import cases_for, random_inputs
from verifier.results.kernel import KernelReport, crash_finding
from verifier.inputs.catalogue import shapes
from verifier.results.options import Options, derived_seed, repro_line
from verifier.battery.build import check_build
from verifier.battery.determinism import check_determinism
from verifier.battery.refusal import check_refusal
from verifier.battery.values import run_case
from verifier.battery import check_kernel
from verifier.errors import Unsupported
from verifier.results.findings import Finding
from verifier.launch.harness import KernelFault
from verifier.declare.registry import load_spec_file
from verifier.report.text import format_finding

SPECS = """
import torch
from verifier.spec import CallableKernel, Expectations, dtypes

def small(M, N, dt):
    return None if N <= 2048 else "N > 2048"

def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

def scaled(inputs, outputs, params, dt):  # wrong on every input
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1) * 1.5)

def noisy(inputs, outputs, params, dt):  # a 1-ULP wobble on random elements, like atomics
    y = torch.softmax(inputs["x"].float(), -1)
    outputs["y"].copy_(torch.where(torch.rand(y.shape) < 0.3, torch.nextafter(y, torch.tensor(2.0)), y))

KERNELS = [CallableKernel(name=n, op="softmax", fn=f, dtypes=[dtypes("f32")], supports=small)
           for n, f in (("good", good), ("scaled", scaled), ("noisy", noisy))]
"""
QUICK = Options(level="quick", device="cpu")


def specs(tmp_path):
    p = tmp_path / "api_spec.py"
    p.write_text(textwrap.dedent(SPECS))
    return {s.name: s for s in load_spec_file(p)}


def inputs_of(spec, dt, case_name, seed=0):
    case = next(c for c in cases_for(spec, dt, "quick") if c.name == case_name)
    rng = np.random.default_rng(derived_seed(seed, spec.name, dt.tag, case.name))
    return case.make(rng, dt, spec.op, spec.op_params())


def test_run_case_judges_one_input_as_the_battery_does(tmp_path):
    k = specs(tmp_path)
    dt = k["good"].dtypes[0]
    clean = run_case(k["good"], dt, "normal_small", inputs_of(k["good"], dt, "normal_small"), QUICK)
    assert clean.findings == [] and clean.cells == {}  # one input marks no cell: a check spans all inputs

    one = run_case(k["scaled"], dt, "normal_small", inputs_of(k["scaled"], dt, "normal_small"), QUICK)
    whole = check_kernel(k["scaled"], Options(level="quick", device="cpu", case="normal_small"))
    assert {f.check for f in one.findings} >= {"value"}
    assert [(f.check, f.message, f.repro) for f in one.findings] == \
        [(f.check, f.message, f.repro) for f in whole.findings]
    assert "--case normal_small" in one.findings[0].repro and one.findings[0].input == "normal_small"


def test_run_case_adds_to_a_given_report_and_records_a_refusal_inside_supports(tmp_path):
    k = specs(tmp_path)
    dt = k["good"].dtypes[0]

    def refuses(spec, inputs, outputs, params, dt, device):
        raise Unsupported("no")

    report = KernelReport(spec=k["good"], device="cpu")
    xs = random_inputs(k["good"], dt, 2, 64, np.random.default_rng(0))
    assert xs["x"].shape == (2, 64)
    back = run_case(k["good"], dt, "c", xs, QUICK, report, run=refuses, repro="my repro")
    assert back is report and [(f.check, f.repro) for f in report.findings] == [("refusal", "my repro")]


def test_check_refusal_and_determinism_mark_their_cells(tmp_path):
    k = specs(tmp_path)
    dt = k["good"].dtypes[0]
    r = check_refusal(k["good"], dt, QUICK)
    assert r.findings == [] and r.cells == {("f32", "refusal"): "pass"}

    def ignores_supports(spec, inputs, outputs, params, dt, device):
        spec.fn(inputs, outputs, params, dt)

    bad = check_refusal(k["good"], dt, QUICK, run=ignores_supports)
    assert bad.findings and all("ran without refusing" in f.message for f in bad.findings)

    assert check_determinism(k["good"], dt, QUICK).cells == {("f32", "determinism"): "pass"}
    noisy = check_determinism(k["noisy"], dt, QUICK)
    assert [f.check for f in noisy.findings] == ["determinism"] and "--case determinism" in noisy.findings[0].repro


def test_check_build_skips_what_has_nothing_to_build(tmp_path):
    k = specs(tmp_path)
    r = check_build(k["good"], QUICK, k["good"].dtypes)
    assert r.findings == []
    assert r.cells == {("f32", "build"): "skipped(not a CUDA source)", ("f32", "resources"): "skipped(Python callable)"}


def test_repro_line_and_crash_finding(tmp_path):
    spec = specs(tmp_path)["good"]
    opts = Options(seed=7, device="cpu")
    line = repro_line(spec, opts, "f32", "hypothesis:1x3:rng5")
    assert shlex.split(line) == ["verifier", "check", spec.origin, "--kernel", "good", "--dtype", "f32",
                                 "--case", "hypothesis:1x3:rng5", "--level", "ci", "--seed", "7", "--device", "cpu"]
    assert "--dtype" not in repro_line(spec, opts)
    f = crash_finding(spec, opts, KernelFault(IndexError("boom")), dtype="f32", input="normal_small")
    assert f.check == "crash" and "raised an exception" in f.message and "boom" in f.message
    assert f.repro == repro_line(spec, opts, "f32", "normal_small") and f.seed == 7


@settings(max_examples=40, database=None, deadline=None)
@given(shape=shapes(16, 100))
def test_hypothesis_shapes_stay_within_bounds(shape):
    M, N = shape
    assert 1 <= M <= 16 and 1 <= N <= 100


def test_format_finding_is_what_the_text_report_and_the_plugin_show():
    f = Finding("value", "3 elements off\nworst at 5", kernel="k", dtype="f32", input="c", shape=(2, 8),
                repro="verifier check x")
    assert format_finding(f) == ["- [value] k, f32, c, shape (2, 8)", "    3 elements off", "    worst at 5",
                                 "    repro: verifier check x"]
    assert format_finding(f, with_kernel=False)[0] == "- [value] f32, c, shape (2, 8)"
    from verifier.plugin.session import format_findings

    assert format_findings([f]) == "\n".join(format_finding(f))
