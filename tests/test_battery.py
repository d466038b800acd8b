"""The check battery (verifier.battery) on CPU CallableKernels declared in temporary spec files."""
import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from verifier.battery import check_kernel
from verifier.isolation import check_all
from verifier.inputs.cases import cases_for, hypothesis_case, random_inputs
from verifier.results.kernel import RUN_CHECKS, KernelReport
from verifier.results.options import Options
from verifier.battery.hypothesis import check_shapes
from verifier.battery.refusal import check_refusal
from verifier.battery.values import run_case
from verifier.errors import Unsupported, UsageError
from verifier.declare.registry import load_spec_file

HEADER = """
import numpy as np, torch
from verifier.spec import CallableKernel, Expectations, dtypes

def small(M, N, dt):  # keeps the boundary case small: the tests stay fast
    return None if N <= 2048 else "N > 2048"

def softmax(x):
    return torch.softmax(x.float(), -1)
"""


def write_spec(tmp_path, body: str, name="k_spec.py") -> Path:
    p = tmp_path / name
    p.write_text(HEADER + textwrap.dedent(body))
    return p


def one(tmp_path, body, kernel=None):
    specs = load_spec_file(write_spec(tmp_path, body))
    return next(s for s in specs if kernel in (None, s.name))


def checks(report):
    return {f.check for f in report.findings}


QUICK = Options(level="quick", device="cpu")


def test_order_of_the_battery_and_a_clean_pass(tmp_path):
    spec = one(tmp_path, """
        def fn(inputs, outputs, params, dt):
            outputs["y"].copy_(softmax(inputs["x"]))
        KERNELS = [CallableKernel(name="ok", op="softmax", fn=fn, dtypes=[dtypes("f32"), dtypes("bf16")],
                                  supports=small)]
        """)
    steps = []
    report = check_kernel(spec, QUICK, steps.append)
    coarse = [s for s in steps if s.split(": ")[-1] in ("build", "refusal", "values", "determinism")]
    assert coarse == ["ok: build", "ok [f32]: refusal", "ok [f32]: values", "ok [f32]: determinism",
                      "ok [bf16]: refusal", "ok [bf16]: values", "ok [bf16]: determinism"]
    # every catalogue case (and the boundary case) is announced between values and determinism
    names = {c.name for c in cases_for(spec, spec.dtypes[0], "quick")}
    assert names <= {s.split(": ")[-1] for s in steps} and "boundary_n2048" in names
    assert report.findings == [] and report.verdict == "pass"
    for tag in ("f32", "bf16"):
        for check in RUN_CHECKS:
            assert report.cells[(tag, check)] == "pass", (tag, check)
        assert report.cells[(tag, "build")].skipped


def test_value_defect_found_for_every_declared_dtype_with_seed_input_and_repro(tmp_path):
    spec = one(tmp_path, """
        def fn(inputs, outputs, params, dt):
            outputs["y"].copy_(softmax(inputs["x"]) * 1.05)
        KERNELS = [CallableKernel(name="big5", op="softmax", fn=fn, dtypes=[dtypes("f32"), dtypes("bf16")])]
        """)
    report = check_kernel(spec, Options(level="quick", seed=7, device="cpu", case="normal_small"))
    values = [f for f in report.findings if f.check == "value"]
    assert {f.dtype for f in values} == {"f32", "bf16"}
    assert "invariant" in checks(report)
    for f in values:
        assert f.seed == 7 and f.input == "normal_small" and f.shape == (4, 128)
        assert f"--kernel big5 --dtype {f.dtype} --case normal_small --level quick --seed 7 --device cpu" in f.repro


def test_unwritten_and_out_of_range_writes_are_findings(tmp_path):
    specs = load_spec_file(write_spec(tmp_path, """
        def lazy(inputs, outputs, params, dt):
            outputs["y"][:, :-1].copy_(softmax(inputs["x"])[:, :-1])
        def overrun(inputs, outputs, params, dt):
            y = outputs["y"]
            y.copy_(softmax(inputs["x"]))
            y.as_strided((y.numel() + 1,), (1,))[-1] = 0.5
        KERNELS = [CallableKernel(name="lazy", op="softmax", fn=lazy, dtypes=[dtypes("f32")]),
                   CallableKernel(name="overrun", op="softmax", fn=overrun, dtypes=[dtypes("f32")])]
        """))
    opts = Options(level="quick", device="cpu", case="normal_small")
    lazy, overrun = (check_kernel(s, opts) for s in specs)
    f = next(f for f in lazy.findings if f.check == "unwritten")
    assert "4 of 512 elements left unwritten" in f.message and "(0, 127)" in f.message
    assert lazy.cells[("f32", "unwritten")] == "FAIL"
    g = next(f for f in overrun.findings if f.check == "out-of-range-write")
    assert "0 bytes after the end" in g.message and "unwritten" not in checks(overrun)


def test_nan_inf_finding(tmp_path):
    spec = one(tmp_path, """
        def fn(inputs, outputs, params, dt):
            y = softmax(inputs["x"])
            y[0, 3] = float("inf")
            outputs["y"].copy_(y)
        KERNELS = [CallableKernel(name="inf", op="softmax", fn=fn, dtypes=[dtypes("f32")])]
        """)
    report = check_kernel(spec, Options(level="quick", device="cpu", case="normal_small"))
    assert "nan-inf" in checks(report)


def test_refusal_outside_and_inside_supports(tmp_path):
    spec = one(tmp_path, """
        def fn(inputs, outputs, params, dt):
            outputs["y"].copy_(softmax(inputs["x"]))
        KERNELS = [CallableKernel(name="r", op="softmax", fn=fn, dtypes=[dtypes("f32")], supports=small)]
        """)
    dt = spec.dtypes[0]

    def ignores_supports(spec, inputs, outputs, params, dt, device):  # a launcher that forgot supports()
        spec.fn(inputs, outputs, params, dt)

    def crashes(spec, inputs, outputs, params, dt, device):
        raise IndexError("index 4096 is out of bounds")

    for run, words in ((ignores_supports, "ran without refusing"), (crashes, "raised IndexError")):
        report = KernelReport(spec=spec, device="cpu")
        check_refusal(spec, dt, QUICK, report, run=run)
        refused = [f for f in report.findings if f.check == "refusal"]
        assert refused and all(words in f.message for f in refused)
        assert {f.shape for f in refused} >= {(0, 32), (1, 2049), (1, 262144)}
        assert all(f.shape[1] > 2048 or f.shape[0] == 0 for f in refused)
        assert all("--case refusal" in f.repro for f in refused)
    # the real runner refuses every such shape with Unsupported: no finding
    report = KernelReport(spec=spec, device="cpu")
    check_refusal(spec, dt, QUICK, report)
    assert report.findings == [] and report.cells[("f32", "refusal")] == "pass"

    # inside supports, a refusal is a finding
    def refuses_all(spec, inputs, outputs, params, dt, device):
        raise Unsupported("no")

    report = KernelReport(spec=spec, device="cpu")
    xs = random_inputs(spec, dt, 2, 64, np.random.default_rng(0))
    run_case(spec, dt, "c", xs, QUICK, report, run=refuses_all, repro="repro")
    assert [f.check for f in report.findings] == ["refusal"] and "supports() accepts" in report.findings[0].message


def test_determinism_bitwise_or_within_tolerance(tmp_path):
    specs = load_spec_file(write_spec(tmp_path, """
        def noisy(inputs, outputs, params, dt):  # a 1-ULP wobble on random elements, like atomics
            y = softmax(inputs["x"])
            flip = torch.rand(y.shape) < 0.3
            outputs["y"].copy_(torch.where(flip, torch.nextafter(y, torch.tensor(2.0)), y))
        KERNELS = [CallableKernel(name="det", op="softmax", fn=noisy, dtypes=[dtypes("f32")]),
                   CallableKernel(name="nondet", op="softmax", fn=noisy, dtypes=[dtypes("f32")],
                                  expectations=Expectations(deterministic=False))]
        """))
    opts = Options(level="quick", device="cpu", case="determinism")
    det, nondet = (check_kernel(s, opts) for s in specs)
    assert [f.check for f in det.findings] == ["determinism"]
    assert "differs bitwise" in det.findings[0].message and "--case determinism" in det.findings[0].repro
    assert nondet.findings == [] and nondet.cells[("f32", "determinism")] == "pass"


def test_inputs_are_fresh_random_draws_per_check_and_seed(tmp_path):
    spec = one(tmp_path, """
        SEEN = []
        def fn(inputs, outputs, params, dt):
            SEEN.append(inputs["x"].clone())
            outputs["y"].copy_(softmax(inputs["x"]))
        KERNELS = [CallableKernel(name="rec", op="softmax", fn=fn, dtypes=[dtypes("f32")], supports=small)]
        """)
    seen = sys.modules[spec.fn.__module__].SEEN

    def inputs_of(**kw):
        del seen[:]
        check_kernel(spec, Options(level="quick", device="cpu", **kw))
        return list(seen)

    (first,) = inputs_of(case="normal_small")
    (same,) = inputs_of(case="normal_small")
    (other_seed,) = inputs_of(case="normal_small", seed=1)
    det = inputs_of(case="determinism")
    (boundary,) = inputs_of(case="boundary_n2048")
    assert bool((first == same).all())  # a seed and case name pin the input (that is what repro relies on)
    assert not bool((first == other_seed).all())  # another seed draws another input
    assert len(det) >= 2 and bool((det[0] == det[1]).all())  # determinism repeats one input
    for x in (first, other_seed, det[0], boundary):
        assert x.abs().min() > 0 and x.std() > 0.5  # random normal draws, not zeros


def test_hypothesis_failure_is_shrunk_to_the_minimal_shape_and_its_repro_reruns_it(tmp_path):
    path = write_spec(tmp_path, """
        def fn(inputs, outputs, params, dt):
            y = softmax(inputs["x"])
            N = y.shape[-1]
            outputs["y"].copy_(y * 1.5 if N > 100 and N % 2 == 1 else y)
        KERNELS = [CallableKernel(name="odd", op="softmax", fn=fn, dtypes=[dtypes("f32")])]
        """)
    spec = load_spec_file(path)[0]
    report = KernelReport(spec=spec, device="cpu")
    opts = Options(level="ci", device="cpu")
    ran = check_shapes(spec, spec.dtypes[0], opts, report)
    assert ran > 0
    values = [f for f in report.findings if f.check == "value"]
    assert len(values) == 1
    f = values[0]
    assert f.shape == (1, 101) and f.input.startswith("hypothesis:1x101:rng")
    assert f"--case {f.input}" in f.repro

    # The repro line, run as a command, finds the same thing on the same input.
    argv = shlex.split(f.repro)
    assert argv[:2] == ["verifier", "check"]
    proc = subprocess.run([sys.executable, "-m", "verifier.cli", *argv[1:], "--format", "json", "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    got = json.loads(proc.stdout)["kernels"][0]["findings"]
    assert {(g["check"], g["input"], tuple(g["shape"])) for g in got} >= {("value", f.input, (1, 101))}


def test_catalogue_finding_repro_reproduces_as_a_subprocess(tmp_path):
    path = write_spec(tmp_path, """
        def fn(inputs, outputs, params, dt):
            y = softmax(inputs["x"])
            y[:, -1] = 0  # drops the last column's probability
            outputs["y"].copy_(y)
        KERNELS = [CallableKernel(name="drop", op="softmax", fn=fn, dtypes=[dtypes("f32")], supports=small)]
        """)
    spec = load_spec_file(path)[0]
    report = check_kernel(spec, Options(level="quick", device="cpu", seed=3))
    f = next(f for f in report.findings if f.check == "value" and f.input == "d7_below_warp")
    argv = shlex.split(f.repro)
    proc = subprocess.run([sys.executable, "-m", "verifier.cli", *argv[1:], "--format", "json", "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    got = json.loads(proc.stdout)["kernels"][0]["findings"]
    again = next(g for g in got if g["check"] == "value")
    assert (again["input"], again["seed"], again["message"]) == (f.input, 3, f.message)


def test_kernel_python_exception_is_a_refusal_finding_and_the_battery_goes_on(tmp_path):
    """Issue #13: a Python exception (not a CUDA fault) on a shape supports() accepts is a refusal, with the fix."""
    spec = one(tmp_path, """
        def fn(inputs, outputs, params, dt):
            if inputs["x"].shape[-1] == 7:
                raise IndexError("lane 7 out of range")
            outputs["y"].copy_(softmax(inputs["x"]))
        KERNELS = [CallableKernel(name="c", op="softmax", fn=fn, dtypes=[dtypes("f32")], supports=small)]
        """)
    report = check_kernel(spec, QUICK)
    assert not [f for f in report.findings if f.check == "crash"]
    refusals = [f for f in report.findings if f.check == "refusal"]
    assert len(refusals) == 1 and refusals[0].input == "d7_below_warp" and "IndexError" in refusals[0].message
    assert "declare supports() returning this reason if the refusal is deliberate" in refusals[0].message
    assert report.cells[("f32", "determinism")] == "pass"  # later checks still ran
    assert report.verdict == "fail"


def test_bad_case_is_a_usage_error_and_pseudo_cases_are_accepted(tmp_path):
    spec = one(tmp_path, """
        def fn(inputs, outputs, params, dt):
            outputs["y"].copy_(softmax(inputs["x"]))
        KERNELS = [CallableKernel(name="k", op="softmax", fn=fn, dtypes=[dtypes("f32")], supports=small)]
        """)
    with pytest.raises(UsageError, match="no catalogue case 'nope'"):
        check_kernel(spec, Options(level="quick", device="cpu", case="nope"))
    with pytest.raises(UsageError, match="no selected kernel has case nope"):
        check_all([spec], Options(level="quick", device="cpu", case="nope"))
    # a case of a bigger budget still reproduces under --budget quick
    thorough_only = {c.name for c in cases_for(spec, spec.dtypes[0], "thorough")} - \
        {c.name for c in cases_for(spec, spec.dtypes[0], "quick")}
    name = min(thorough_only, key=lambda n: next(c.M * c.N for c in cases_for(spec, spec.dtypes[0], "thorough")
                                                  if c.name == n))
    report = check_kernel(spec, Options(level="quick", device="cpu", case=name))
    assert report.cells[("f32", "value")] == "pass"
    assert hypothesis_case("hypothesis:3x17:rng5").M == 3 and hypothesis_case("n1000") is None


def test_dtype_selection_skips_kernels_without_it(tmp_path):
    specs = load_spec_file(write_spec(tmp_path, """
        def fn(inputs, outputs, params, dt):
            outputs["y"].copy_(softmax(inputs["x"]))
        KERNELS = [CallableKernel(name="a", op="softmax", fn=fn, dtypes=[dtypes("f32")], supports=small),
                   CallableKernel(name="b", op="softmax", fn=fn, dtypes=[dtypes("bf16")], supports=small)]
        """))
    a, b = check_all(specs, Options(level="quick", device="cpu", dtype="bf16", case="normal_small"))
    assert a.verdict == "skipped" and "declares no dtype bf16" in a.cells[("*", "value")].reason
    assert b.verdict == "pass"
    with pytest.raises(UsageError, match="no selected kernel has dtype f16"):
        check_all(specs, Options(level="quick", device="cpu", dtype="f16"))


def test_cuda_kernel_on_cpu_is_built_for_both_arches_and_skips_the_rest_precisely():
    # One CUDA build at most (cached across runs in the verifier's build cache).
    spec = next(k for k in load_spec_file("kernels/cuda/rmsnorm_spec.py"))
    report = check_kernel(spec, Options(level="quick", device="cpu", dtype=spec.dtypes[0].tag))
    tag = spec.dtypes[0].tag
    assert report.cells[(tag, "build")] == "pass" and report.cells[(tag, "resources")] == "pass"
    assert {n.split("]")[0] for n in report.notes if n.startswith("[sm_")} == {"[sm_80", "[sm_90"}
    for check in RUN_CHECKS:
        assert report.cells[(tag, check)] == "skipped(no CUDA GPU: CUDA kernels are built and resource-checked only)"
    assert report.findings == []
