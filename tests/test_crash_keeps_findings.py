"""A kernel whose check dies in its child process (a segfault, an abort, killed at the timeout) keeps what the cases
before the crash found: the child keeps its report on disk at each step (verifier.isolation.journal), and the
parent's report is that, the crash / timeout finding naming the case that was running, and notes naming what never
ran (verifier.battery.unfinished). Before, the report held the crash alone: a value error in normal_small that
explains a later crash was lost."""
from __future__ import annotations

import json

import pytest

from verifier.declare.registry import load_spec_file
from verifier.isolation import check_all
from verifier.battery.unfinished import mark_unfinished
from verifier.report import FORMATS, render
from verifier.results.kernel import KernelReport
from verifier.results.options import Options
from verifier.results.run import Result
from verifier.results.serialize import from_dict

SPEC = """
import ctypes, os, time, torch
from verifier.spec import CallableKernel, dtypes

def _softmax(x, wrong_n):
    y = torch.softmax(x.float(), -1)
    return y * 1.01 if x.shape[1] == wrong_n else y  # wrong on normal_small (4 x 128)

def segv_late(inputs, outputs, params, dt):  # wrong on normal_small, reads address 0 on d7_below_warp (4 x 7)
    if inputs["x"].shape[1] == 7:
        ctypes.string_at(0)
    outputs["y"].copy_(_softmax(inputs["x"], 128))

def abort_first(inputs, outputs, params, dt):
    os.abort()

def hang_late(inputs, outputs, params, dt):  # wrong on normal_small, hangs on mean_gg_std_1000 (4 x 1024)
    while inputs["x"].shape[1] == 1024:
        time.sleep(0.05)
    outputs["y"].copy_(_softmax(inputs["x"], 128))

def dies_on_a_drawn_shape(inputs, outputs, params, dt):  # right on every catalogue case, aborts on a drawn one
    from verifier.inputs.cases import cases_for
    k = KERNELS[-1]
    if inputs["x"].shape[1] not in {c.N for c in cases_for(k, k.dtypes[0], "ci")}:
        os.abort()
    outputs["y"].copy_(_softmax(inputs["x"], -1))

TWO = [dtypes("f32"), dtypes("f16")]
KERNELS = [CallableKernel(name=n, op="softmax", fn=globals()[n], dtypes=TWO)
           for n in ("segv_late", "abort_first", "hang_late")]
KERNELS.append(CallableKernel(name="drawn", op="softmax", fn=dies_on_a_drawn_shape, dtypes=[dtypes("f32")]))
"""
QUICK = Options(level="quick", device="cpu", seed=0)


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    p = tmp_path_factory.mktemp("crashkeep") / "crashkeep_spec.py"
    p.write_text(SPEC)
    return {k.name: k for k in load_spec_file(p)}


def _one(report, check):
    found = [f for f in report.findings if f.check == check]
    assert len(found) == 1, [(f.check, f.input, f.message[:80]) for f in report.findings]
    return found[0]


def _kept_the_early_value_error(r, died: str, at: str, never: tuple):
    value = _one(r, "value")
    assert (value.dtype, value.input) == ("f32", "normal_small")
    assert r.cells[("f32", "value")] == "FAIL" and r.cells[("f32", "refusal")] == "pass"  # refusal completed
    dead = _one(r, died)
    assert (dead.dtype, dead.input) == ("f32", at) and f"--case {at}" in dead.repro
    assert "not run after it" in dead.message and "every step of f16" in dead.message
    # Nothing of f16 ran: every cell skipped, none reads pass; the f32 checks the crash cut short are not passes.
    assert all(c.skipped for (tag, _), c in r.cells.items() if tag == "f16")
    assert all(r.cells[("f32", c)].skipped for c in ("rounding", "nan-inf", "unwritten", "determinism"))
    assert r.verdict == "fail"
    f32, = [n for n in r.notes if n.startswith("[f32] not run")]
    assert f"while checking case {at}" in f32 and f32.kind == "case-not-run"
    assert all(name in f32 for name in never) and "determinism" in f32 and "normal_small" not in f32.split("never")[1]
    assert "input(s) judged before it" in f32
    f16, = [n for n in r.notes if n.startswith("[f16] not run")]
    assert "refusal" in f16 and "values" in f16 and "determinism" in f16


def test_a_segfault_after_a_value_error_keeps_the_value_error_in_a_fork(specs):
    r, = check_all([specs["segv_late"]], QUICK)  # the CPU default: a fork
    _kept_the_early_value_error(r, "crash", "d7_below_warp", ("increasing_rows", "zero_rows"))
    assert "SIGSEGV" in _one(r, "crash").message


def test_an_abort_after_a_value_error_keeps_it_in_a_fresh_child(specs):
    r, = check_all([specs["segv_late"]], QUICK, isolate=True)  # python -m verifier.isolation.child
    _kept_the_early_value_error(r, "crash", "d7_below_warp", ("increasing_rows", "zero_rows"))


def test_a_crash_on_the_first_case_is_the_crash_alone(specs):
    r, = check_all([specs["abort_first"]], QUICK)
    assert [f.check for f in r.findings] == ["crash"] and r.findings[0].input == "normal_small"
    assert r.verdict == "fail"
    assert all(c.skipped for (_, check), c in r.cells.items() if check not in ("crash", "refusal"))
    f32, = [n for n in r.notes if n.startswith("[f32] not run")]
    assert "mean_gg_std_1000" in f32 and "d7_below_warp" in f32 and "judged" not in f32  # nothing was judged


def test_a_timeout_kill_keeps_the_findings_before_it(specs):
    # The hang is on the second case; the first (a few ms) must finish within the limit on a loaded CI machine.
    r, = check_all([specs["hang_late"]], Options(level="quick", device="cpu", seed=0, timeout=6))
    _kept_the_early_value_error(r, "timeout", "mean_gg_std_1000", ("fully_masked_rows", "d7_below_warp"))
    assert "within 6 s" in _one(r, "timeout").message


def test_every_format_renders_the_kept_findings_and_the_crash(specs):
    r, = check_all([specs["segv_late"]], QUICK)
    result = Result(reports=[r], environment={}, options=QUICK.to_dict())
    for fmt in FORMATS:
        text = render(result, fmt)
        assert "d7_below_warp" in text and "normal_small" in text, fmt
    back = from_dict(json.loads(render(result, "json"))).reports[0]
    assert sorted(f.check for f in back.findings) == sorted(f.check for f in r.findings)
    assert [str(n) for n in back.notes] == [str(n) for n in r.notes] and back.verdict == "fail"


class _Dt:
    def __init__(self, tag):
        self.tag = tag


def test_a_death_under_a_later_autotune_config_unmarks_the_first_configs_pass(specs):
    """The values cells an earlier config passed are not a pass of the config the child died under; a death in
    the drawn shapes names what comes after them."""
    spec = specs["segv_late"]
    r = KernelReport(spec=spec, device="cpu")
    r.mark("f32", "refusal", "pass")
    r.mark("f32", "value", "pass")
    cfg = "values under autotune config 2 of 3 (k: BLOCK=64)"
    steps = [("", "build"), ("f32", "refusal"), ("f32", "values"), ("f32", "values under autotune config 1 of 3"),
             ("f32", "normal_small"), ("f32", cfg), ("f32", "normal_small"), ("f32", "mean_gg_std_1000")]
    clause = mark_unfinished(r, spec, QUICK, steps, "died")
    assert r.cells[("f32", "refusal")] == "pass" and r.cells[("f32", "value")].skipped
    note, = [n for n in r.notes if n.startswith("[f32]")]
    assert "fully_masked_rows" in note and "autotune config(s) 3 to 3" in note and "mean_gg_std_1000," not in note
    assert "every step of f16" in clause
    r2 = KernelReport(spec=spec, device="cpu")
    ci = Options(level="ci", device="cpu", seed=0)
    mark_unfinished(r2, spec, ci, [("f32", "values"), ("f32", "zero_rows"), ("f32", "hypothesis:3x9:rng5")], "died")
    note, = [n for n in r2.notes if n.startswith("[f32]")]
    assert "case hypothesis:3x9:rng5" in note and "the drawn shapes after it; determinism" in note


def test_a_crash_on_a_drawn_shape_names_that_shape_not_the_last_catalogue_case(specs):
    """The battery announces each Hypothesis-drawn input: before, the crash named the last catalogue case, which
    had passed."""
    r, = check_all([specs["drawn"]], Options(level="ci", device="cpu", seed=0))
    crash = _one(r, "crash")
    assert crash.input.startswith("hypothesis:") and f"--case {crash.input}" in crash.repro, crash.message
    assert "the drawn shapes after it, determinism of f32" in crash.message


def test_a_battery_stopped_at_its_deadline_in_its_own_process_says_the_same(specs):
    # Where the battery's own watchdog stops the hung call before the parent kills the child (CI saw either), the
    # timeout finding names what never ran just as a killed child's does.
    from verifier.battery import check_kernel

    r = check_kernel(specs["hang_late"], Options(level="quick", device="cpu", seed=0, timeout=3))
    _kept_the_early_value_error(r, "timeout", "mean_gg_std_1000", ("fully_masked_rows", "d7_below_warp"))
    assert "were stopped" in _one(r, "timeout").message
