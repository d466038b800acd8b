"""verifier.isolation.children: a kernel checked in a child process; a crash or a hang is a finding and checking goes on.

The mechanism is the one used on a GPU (where a fault kills the CUDA context); here it is forced on CPU
CallableKernels with check_all(isolate=True).
"""
import os
import textwrap

import pytest

from verifier.isolation import children as isolate
from verifier.isolation import check_all
from verifier.constants import KERNEL_TIMEOUT_ENV
from verifier.results.options import Options
from verifier.errors import UsageError
from verifier.declare.registry import load_spec_file

SPEC = """
import os, sys, time, torch
from verifier.spec import CallableKernel, dtypes

def aborts(inputs, outputs, params, dt):
    sys.stderr.write("CUDA error: an illegal memory access was encountered (CUDA_ERROR_ILLEGAL_ADDRESS)\\n")
    sys.stderr.flush()
    os.abort()

def exits(inputs, outputs, params, dt):
    sys.stderr.write("lane 3 gave up\\n")
    sys.stderr.flush()
    os._exit(7)

def hangs(inputs, outputs, params, dt):
    while True:
        time.sleep(0.05)

def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

def wrong_dtype(inputs, outputs, params, dt):
    return {"y": torch.softmax(inputs["x"].double(), -1)}

F32 = [dtypes("f32")]
KERNELS = [CallableKernel(name=n, op="softmax", fn=globals()[n], dtypes=F32)
           for n in ("aborts", "exits", "hangs", "good", "wrong_dtype")]
"""


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    p = tmp_path_factory.mktemp("iso") / "iso_spec.py"
    p.write_text(SPEC)
    return {k.name: k for k in load_spec_file(p)}


def test_crash_timeout_and_the_next_kernel_still_checked(specs):
    # 6 s: the good kernel's one case must fit in it on a loaded 2-core CI machine; the hang never does. Two
    # lanes: the hang, started first, waits out its timeout in one while the others go on in the other (-j 2).
    opts = Options(level="quick", device="cpu", case="normal_small", timeout=6)
    hung, aborted, exited, good = check_all([specs[n] for n in ("hangs", "aborts", "exits", "good")], opts,
                                            isolate=True, jobs=2)

    (f,) = aborted.findings
    assert f.check == "crash" and "CUDA_ERROR_ILLEGAL_ADDRESS" in f.message
    assert "an illegal memory access was encountered" in f.message  # the stderr tail
    assert f.input == "normal_small" and f.dtype == "f32" and "--case normal_small" in f.repro

    (g,) = exited.findings
    assert g.check == "crash" and "exit status 7" in g.message and "lane 3 gave up" in g.message

    (h,) = hung.findings
    assert h.check == "timeout" and "within 6 s" in h.message and h.repro.startswith("verifier check ")
    assert hung.verdict == "fail"
    assert hung.cells[("f32", "value")].reason.startswith("no result: the child process timed out")

    assert good.findings == [] and good.verdict == "pass" and good.cells[("f32", "value")] == "pass"


def test_usage_error_in_the_child_is_raised_in_the_parent(specs, monkeypatch, tmp_path):
    # A usage error only the child meets (a process-wide setting): simulated by a sitecustomize raising one.
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import verifier.battery.values as b
        from verifier.errors import UsageError
        def refused(*a, **k):
            raise UsageError("a setting only the child reads is wrong", fix="set it right")
        b.evaluate = refused
        """))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    with pytest.raises(UsageError, match="a setting only the child reads is wrong"):  # the run's end, exit 2
        check_all([specs["good"]], Options(level="quick", device="cpu", case="normal_small"), isolate=True)


def test_a_wrong_output_dtype_in_the_child_is_that_kernels_error(specs):
    """The kernel's answer, not the user's command line: its error (exit 1), the run goes on (issue #35 item 6)."""
    (r,) = check_all([specs["wrong_dtype"]], Options(level="quick", device="cpu", case="normal_small"), isolate=True)
    assert r.verdict == "error" and r.error_kind == "user", (r.verdict, r.error)
    assert "returned output 'y' of dtype torch.float64" in r.error and "fix: return the declared output dtype" in r.error


def test_internal_error_in_the_child_is_an_error_verdict_not_a_crash(specs, monkeypatch, tmp_path):
    # A bug in the verifier inside the child: simulated by a sitecustomize that breaks evaluate().
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import verifier.battery.values as b
        def broken(*a, **k):
            raise ZeroDivisionError("verifier bug")
        b.evaluate = broken
        """))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    (r,) = check_all([specs["good"]], Options(level="quick", device="cpu", case="normal_small"), isolate=True)
    assert r.verdict == "error" and "ZeroDivisionError: verifier bug" in r.error and r.findings == []


def test_timeout_is_injectable_and_validated(monkeypatch):
    monkeypatch.delenv(KERNEL_TIMEOUT_ENV, raising=False)
    assert Options().kernel_timeout == 600
    monkeypatch.setenv(KERNEL_TIMEOUT_ENV, "2.5")
    assert Options().kernel_timeout == 2.5
    assert Options(timeout=9).kernel_timeout == 9  # the option wins over the environment
    assert Options(timeout=9, sanitize=True, sanitize_tools=("memcheck",)).kernel_timeout == 9 + 300
    monkeypatch.setenv(KERNEL_TIMEOUT_ENV, "soon")
    with pytest.raises(UsageError, match="VERIFIER_KERNEL_TIMEOUT"):
        Options().kernel_timeout
    with pytest.raises(UsageError, match="Options.timeout -1 is not a positive number"):
        Options(timeout=-1)


def test_last_step_names_dtype_and_input():
    class S:
        name = "k"

    err = "verifier-step: k: build\nverifier-step: k [bf16]: values\nverifier-step: k [bf16]: n1000\nboom\n"
    assert isolate._last_step(err, S) == {"dtype": "bf16", "input": "n1000"}
    assert isolate._last_step("verifier-step: k [f32]: values\n", S) == {"dtype": "f32"}
    assert isolate._last_step("nothing\n", S) == {}
