"""A @triton.jit function reading a plain module global (``LOG2E = 1.4427``) does not compile on a GPU (compiled
Triton raises NameError for a global that is not a tl.constexpr) while the interpreter runs it: a CPU check said
pass for the bundled Triton merge-attn-states, which then crashed at compile time on the H200 (2026-12-05).
verifier.launch.triton_globals reads it from the source; an interpreted check reports it as a build finding (an
error where the read is certain, a warning under a constexpr branch)."""
import os

import pytest

from verifier.launch.triton import activate, triton_mode
from verifier.launch.triton_globals import plain_globals, refuses_plain_globals

MODULE = '''
import triton
import triton.language as tl

SCALE = 2.0
HALF = tl.constexpr(0.5)
LIMIT = 2 ** 14
from math import pi as PI


@triton.jit
def _row_sum(x, y, N, sx, BLOCK: tl.constexpr, TWICE: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    v = tl.load(x + r * sx + c, mask=c < N, other=0.0).to(tl.float32)
    s = tl.sum(v, 0) * (HALF + HALF)
    if TWICE:
        s = s * SCALE
    tl.store(y + r, s + 0.0 * PI * 0.0)


@triton.jit
def _row_sum_plain(x, y, N, sx, BLOCK: tl.constexpr):
    LOCAL = 1.0
    r = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    v = tl.load(x + r * sx + c, mask=c < N, other=0.0).to(tl.float32)
    tl.store(y + r, tl.sum(v, 0) * SCALE * LOCAL * 0.5)


def _launch(kernel, **kw):
    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        M, N = x.shape
        kernel[(M,)](x, outputs["y"], N, x.stride(0), BLOCK=triton.next_power_of_2(N), **kw)
    return launch


branch = _launch(_row_sum, TWICE=False)
certain = _launch(_row_sum_plain)
'''


def test_plain_globals_are_read_from_the_source(tmp_path):
    path = tmp_path / "row_sum_globals.py"
    path.write_text(MODULE)
    got = {(fn, name, under) for fn, name, _, under in plain_globals(path)}
    # HALF is a constexpr, PI an import, LOCAL the function's own, LIMIT never read: none of them
    assert got == {("_row_sum", "SCALE", True), ("_row_sum_plain", "SCALE", False)}
    assert {fn for fn, *_ in plain_globals(path, "branch")} == {"_row_sum"}  # what the launcher reaches


@pytest.fixture(scope="module")
def interpreted():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled: the compile itself says it (a crash finding)")
    activate("interpreter")  # before anything imports triton
    if not refuses_plain_globals():
        pytest.skip("the installed Triton compiles plain globals (before 3.2)")


@pytest.mark.interpreter
@pytest.mark.parametrize("launcher, severity", [("certain", "error"), ("branch", "warning")])
def test_an_interpreted_check_reports_them_as_build_findings(interpreted, tmp_path, launcher, severity):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes

    path = tmp_path / "row_sum_globals.py"
    path.write_text(MODULE)
    spec = TritonKernel(name=f"sum-{launcher}", op="reduce_sum", module=str(path), launcher=launcher,
                        dtypes=[dtypes("f32")], supports=lambda M, N, d: None if N <= 4096 else "one block")
    report = check_kernel(spec, Options(level="quick", device="cpu"))
    found = [f for f in report.findings if f.check == "build"]
    assert len(found) == 1 and found[0].severity == severity and "SCALE" in found[0].message, report.findings
    assert "tl.constexpr" in found[0].message
    assert report.verdict == ("fail" if severity == "error" else "pass")
