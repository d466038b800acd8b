"""libdevice's exactly defined rounding functions run in the Triton interpreter (verifier.launch.libdevice.
libdevice_in_numpy): a quantizer rounding with ``libdevice.round(x).to(tl.int8)`` (vLLM's and SGLang's Triton int8
quantizers do), or through an alias bound at import (``tl_round = tl.extra.cuda.libdevice.round``, lmdeploy's), is
checked on the CPU, not left ``unchecked`` as an interpreter gap, and a truncating one fails."""
import os
from pathlib import Path

import pytest
import torch

from verifier.launch.triton import activate, triton_mode

pytestmark = pytest.mark.interpreter

SPEC = Path(__file__).parent / "data" / "libdevice_round" / "round_int8_spec.py"


@pytest.fixture(scope="module")
def interpreted():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; the interpreter's libdevice gap does not arise")
    activate("interpreter")


def test_round_rint_trunc_have_their_exact_semantics(interpreted):
    import triton
    import triton.language as tl

    from verifier.launch.interpreter import watch

    @triton.jit
    def k(x_ptr, a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + o)
        tl.store(a_ptr + o, tl.extra.cuda.libdevice.round(x))
        tl.store(b_ptr + o, tl.extra.cuda.libdevice.rint(x))
        tl.store(c_ptr + o, tl.extra.cuda.libdevice.trunc(x))
        tl.store(d_ptr + o, tl.extra.cuda.libdevice.floor(x))

    import triton.language.extra.cuda.libdevice as cuda_libdevice

    before = cuda_libdevice.round
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -126.5, 3.7])
    out = [torch.empty(8) for _ in range(4)]
    with watch():
        k[(1,)](x, *out, BLOCK=8)
    assert out[0].tolist() == [1.0, 2.0, 3.0, -1.0, -3.0, 0.0, -127.0, 4.0]  # roundf: ties away from zero
    assert out[1].tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 0.0, -126.0, 4.0]  # rint: ties to even
    assert out[2].tolist() == [0.0, 1.0, 2.0, -0.0, -2.0, 0.0, -126.0, 3.0]
    assert out[3].tolist() == [0.0, 1.0, 2.0, -1.0, -3.0, 0.0, -127.0, 3.0]
    assert cuda_libdevice.round is before  # restored after the launch


def test_libdevice_rounding_quantizers_are_checked_on_cpu(interpreted):
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    got = {k.name: check_kernel(k, Options(level="quick", device="cpu")) for k in load_spec_file(str(SPEC))}
    for name in ("int8-libdevice-round", "int8-libdevice-rint"):
        assert got[name].verdict == "pass", (name, [f.message for f in got[name].findings][:3])
    bad = got["int8-libdevice-trunc"]
    assert bad.verdict == "fail" and any("toward zero" in f.message for f in bad.findings), \
        [f.message for f in bad.findings][:3]


def test_fma_rounds_once_as_fmaf():
    """libdevice.fma in the interpreter: (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 with one rounding (fmaf); float32's
    a * b + c rounds the product to 1 + 2^-11 first and gives 0."""
    import numpy as np

    from verifier.launch.libdevice import _np_table

    a = np.array([1 + 2.0**-12], np.float32)
    c = np.array([-(1 + 2.0**-11)], np.float32)
    assert float(np.asarray(_np_table()["fma"](a, a, c)).astype(np.float32)[0]) == 2.0**-24
    assert float((a * a + c)[0]) == 0.0  # what it was
