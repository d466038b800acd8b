"""The strided case gives a Triton kernel's (and a callable's) 2-D tensors each a row stride of its own
(verifier.inputs.layouts.row_pad): a kernel indexing the output, or the in-out residual, with x's stride (aiter's
per-token quant, its fused add + RMSNorm) fails there; before, every tensor had x's stride and it passed."""
import os

import pytest

from interpreter_process import interpreter  # noqa: F401 (the fixture)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "blind_tri6", "shared_stride.py")


def _check(launcher, op):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes, max_row

    spec = TritonKernel(name=f"{op}-{launcher}", op=op, module=HERE, launcher=launcher, dtypes=[dtypes("f32")],
                        supports=max_row(4096))
    return check_kernel(spec, Options(level="quick", device="cpu", case="strided_rows_pad64"))


@pytest.mark.parametrize("op, shared, own", [("rmsnorm", "norm_shared", "norm_own"),
                                             ("fused_add_rmsnorm", "add_shared", "add_own")])
def test_a_tensor_indexed_with_xs_stride_fails_the_strided_case(interpreter, op, shared, own):
    bad = _check(shared, op)
    assert bad.verdict == "fail" and {f.check for f in bad.findings} & {"value", "out-of-range-write"}, \
        [f.message for f in bad.findings][:3]
    good = _check(own, op)
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings][:3]
