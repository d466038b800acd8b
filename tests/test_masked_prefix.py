"""Case masked_prefix_40000 (the softmax family and cross entropy): rows whose first 33,000 of 40,000 logits are
-inf, so a tiled online softmax meets a tile of only -inf before any finite value. Unguarded, exp(-inf - -inf) = NaN
turns the row NaN (aiter's online softmax, Liger-Kernel 0.8.5's cross entropy); no case had a -inf run longer than
one tile before, so such kernels passed."""
import os


from interpreter_process import interpreter  # noqa: F401 (the fixture)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "blind_tri6", "online_tiles.py")


def _check(launcher):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes

    spec = TritonKernel(name=f"tiled-softmax-{launcher}", op="softmax", module=HERE, launcher=launcher,
                        dtypes=[dtypes("f32")])
    return check_kernel(spec, Options(level="ci", device="cpu", case="masked_prefix_40000"))


def test_a_tile_of_only_neg_inf_before_the_first_finite_value_is_caught(interpreter):
    bad = _check("unguarded")
    assert bad.verdict == "fail" and "nan-inf" in {f.check for f in bad.findings}, [f.message for f in bad.findings]
    good = _check("guarded")
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings][:3]
