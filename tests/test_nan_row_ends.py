"""Case nan_row_ends_40000 (the softmax family and cross entropy): a NaN at column 0 or at the last of 40,000. A
tiled online softmax whose lanes start at -inf and skip lanes whose max is still -inf drops a NaN met in its first
tile (maxnum(NaN, -inf) = -inf), so the row comes out finite where torch gives NaN (FlagGems' softmax past 32,768
columns). The only NaN case before, some_nan, has rows of 128: one tile, where such kernels propagate it."""
import os

from interpreter_process import interpreter  # noqa: F401 (the fixture)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "nan_row_ends", "tiled_softmax.py")


def _check(launcher, case="nan_row_ends_40000"):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes

    spec = TritonKernel(name=f"tiled-softmax-{launcher}", op="softmax", module=HERE, launcher=launcher,
                        dtypes=[dtypes("f32")], online=True, math_mode="triton_approx")
    return check_kernel(spec, Options(level="ci", device="cpu", case=case))


def test_a_nan_in_the_first_tile_of_a_long_row_is_caught(interpreter):
    bad = _check("skips_nan")
    assert bad.verdict == "fail" and "nan-inf" in {f.check for f in bad.findings}, [f.message for f in bad.findings]
    assert all("nan_row_ends_40000" in f.repro for f in bad.findings)
    good = _check("keeps_nan")
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings][:3]


def test_the_short_nan_case_does_not_see_it(interpreter):
    assert _check("skips_nan", case="some_nan").verdict == "pass"  # one tile: the NaN propagates there
