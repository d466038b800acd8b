"""A library's ``with torch.cuda.device(x.device.index):`` around its Triton launch (FBGEMM's quantizers) on a
machine whose torch has no CUDA: the interpreted run makes it select nothing (verifier.launch.interpreter,
no_cuda_device), so the kernel is checked; before, torch raised on the CPU tensor's device (index None: TypeError,
a CPU device: ValueError) and the kernel's verdict was an error blaming the launcher."""
import os

import pytest
import torch

from verifier.launch.triton import activate, triton_mode

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "blind_tri6", "cuda_device_ctx.py")


@pytest.fixture(scope="module")
def interpreter():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; these tests concern the interpreter")
    if torch.cuda.is_available():
        pytest.skip("torch sees a CUDA device here: torch.cuda.device works as the library expects")
    activate("interpreter")


@pytest.mark.parametrize("launcher", ["by_index", "by_device"])
def test_a_librarys_cuda_device_context_selects_nothing_on_the_cpu(interpreter, launcher):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes, max_row

    spec = TritonKernel(name=f"sum-{launcher}", op="reduce_sum", module=HERE, launcher=launcher,
                        dtypes=[dtypes("f32")], supports=max_row(4096))
    report = check_kernel(spec, Options(level="quick", device="cpu"))
    assert report.error is None and report.verdict == "pass", (report.error, [f.message for f in report.findings][:3])
    with torch.cuda.device(-1):  # restored afterwards: torch's own class again
        pass
    assert torch.cuda.device.__module__.startswith("torch")
