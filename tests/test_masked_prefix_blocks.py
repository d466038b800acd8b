"""Case masked_prefix_80000 (logsumexp and online_softmax_stats; cross entropy's ce_masked_prefix_80000 with its
labels on finite logits): the first 70,000 of 80,000 values -inf, so a kernel splitting a row into blocks of 65,536
(Triton's one-block limit) and merging the blocks' lse after meets a whole block of -inf, whose exp(-inf - -inf) = NaN
spoils a finite row (flash-linear-attention's logsumexp_fwd and cross_entropy_loss). masked_prefix_40000 has no such
block (a row of 40,000 is one block there), so such kernels passed. tests/data/blocked_lse/."""
import os

from interpreter_process import interpreter  # noqa: F401 (the fixture)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "blocked_lse", "blocked_lse.py")


def _check(launcher):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes

    spec = TritonKernel(name=f"blocked-lse-{launcher}", op="logsumexp", module=HERE, launcher=launcher,
                        dtypes=[dtypes("f32")], params={"lse_nonfinite": "nan"})
    return check_kernel(spec, Options(level="ci", device="cpu", case="masked_prefix_80000"))


def test_a_whole_block_of_neg_inf_in_a_split_row_is_caught(interpreter):
    bad = _check("unguarded")
    assert bad.verdict == "fail" and "nan-inf" in {f.check for f in bad.findings}, [f.message for f in bad.findings]
    assert {f.input for f in bad.findings} == {"masked_prefix_80000"}
    good = _check("guarded")
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings][:3]
