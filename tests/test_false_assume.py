"""A tl.assume whose condition is false in some program (aiter's ``tl.assume(pid > 0)``, false in program 0): the
interpreter raised AssertionError('Assume failed') there, so every case was a crash and nothing else was checked.
Now it is one finding per dtype naming the line, and the values are checked past it."""
import os


from interpreter_process import interpreter  # noqa: F401 (the fixture)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "blind_tri6", "false_assume.py")


def _check(launcher):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes, max_row

    spec = TritonKernel(name=f"sum-{launcher}", op="reduce_sum", module=HERE, launcher=launcher,
                        dtypes=[dtypes("f32")], supports=max_row(4096))
    return check_kernel(spec, Options(level="quick", device="cpu"))


def test_a_false_assumption_is_one_finding_and_the_values_are_still_checked(interpreter):
    bad = _check("strict")
    assert bad.error is None, bad.error
    assert len(bad.findings) == 1, [f.message for f in bad.findings][:3]
    f = bad.findings[0]
    assert f.check == "crash" and "false_assume.py:11: tl.assume(pid > 0)" in f.message, f.message
    assert "program (0, 0, 0)" in f.message and "pid >= 0" in f.message, f.message
    assert bad.cells[("f32", "value")].status == "pass", bad.cells
    good = _check("loose")
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings][:3]
