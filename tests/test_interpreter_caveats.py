"""Facts about the Triton interpreter that the battery works around (verifier.battery.gate.interpreter_caveat).

If a Triton release fixes one, its test here fails: then drop the caveat so the case runs again.
"""
import os

import pytest
import torch

from verifier.launch.triton import activate, triton_mode

pytestmark = pytest.mark.interpreter


@pytest.fixture(scope="module")
def tl_kernels():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; the caveats concern the interpreter")
    activate("interpreter")
    import triton
    import triton.language as tl

    @triton.jit
    def load_bf16(x, y, n, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        tl.store(y + o, tl.load(x + o, mask=o < n).to(tl.float32), mask=o < n)

    return load_bf16


def test_interpreter_decodes_bf16_subnormals_wrongly(tl_kernels):
    x = torch.tensor([6.5e-39, -9.0e-39, 1.0], dtype=torch.bfloat16)
    y = torch.empty(3)
    tl_kernels[(1,)](x, y, 3, BLOCK=4)
    assert y[2].item() == 1.0  # normal values load exactly
    # the subnormals do not: the battery skips bf16 inputs holding subnormals in interpreter mode
    assert y[0].item() != x[0].float().item()


def test_caveat_applies_only_to_bf16_subnormals_in_interpreter():
    import numpy as np
    import ml_dtypes

    from verifier.battery.gate import interpreter_caveat
    from verifier.spec import TritonKernel, dtypes

    spec = TritonKernel(name="t", op="softmax", module="m.py", launcher="launch", dtypes=[dtypes("bf16")])
    sub = {"x": np.array([[6.5e-39, 1.0]], dtype=ml_dtypes.bfloat16)}
    normal = {"x": np.array([[0.5, 1.0]], dtype=ml_dtypes.bfloat16)}
    assert interpreter_caveat(spec, dtypes("bf16"), sub, "cpu")
    assert interpreter_caveat(spec, dtypes("bf16"), normal, "cpu") is None
    assert interpreter_caveat(spec, dtypes("bf16"), sub, "cuda") is None
