"""A kernel the installed Triton cannot run is not a defective kernel (verifier.battery.gate.after_run): cases it
could not run are notes and skipped cells, never crash findings.

- inline PTX (``tl.inline_asm_elementwise``; FlashInfer / SGLang fast-math helpers) and extern calls raise
  NotImplementedError in the interpreter only: an interpreter gap, the values unchecked on a CPU;
- an API the installed Triton removed (Triton 3.9 dropped ``tl.make_block_ptr``, which FLA's fused_norm_gate
  takes for rows of <= 512 columns) fails compiled and interpreted alike: those cases are not run, with the words
  to fix it, and the shapes that take another path of the kernel are still judged.

Before this, each case of both kernels was a crash finding (FLA's gated RMSNorm: 47 on a CPU).
"""
import os

import pytest

from verifier.launch.triton import activate, triton_mode

pytestmark = pytest.mark.interpreter

MODULE = '''
import triton
import triton.language as tl


@triton.jit
def _row_sum(x, y, N, sx, BLOCK: tl.constexpr, ASM: tl.constexpr, BLOCK_PTR: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    if BLOCK_PTR:  # the short-row path, as FLA's: a block pointer
        p = tl.make_block_ptr(x + r * sx, (N,), (1,), (0,), (BLOCK,), (0,))
        v = tl.load(p, boundary_check=(0,)).to(tl.float32)
    else:
        v = tl.load(x + r * sx + c, mask=c < N, other=0.0).to(tl.float32)
    s = tl.sum(v, 0)
    if ASM:  # a no-op in PTX: compiled Triton runs it
        s = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [s], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(y + r, s)


def _launch(asm, short_path):
    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        M, N = x.shape
        _row_sum[(M,)](x, outputs["y"], N, x.stride(0), BLOCK=triton.next_power_of_2(N), ASM=asm,
                       BLOCK_PTR=short_path and N <= 64)
    return launch


inline_asm, block_ptr, plain = _launch(True, False), _launch(False, True), _launch(False, False)
'''


@pytest.fixture(scope="module")
def interpreted():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; inline PTX runs there")
    activate("interpreter")


def _check(tmp_path, launcher):
    from verifier.battery import check_kernel
    from verifier.results.options import Options
    from verifier.spec import TritonKernel, dtypes

    path = tmp_path / "row_sum_gaps.py"
    path.write_text(MODULE)
    spec = TritonKernel(name=f"sum-{launcher}", op="reduce_sum", module=str(path), launcher=launcher,
                        dtypes=[dtypes("f32")], supports=lambda M, N, d: None if N <= 4096 else "one block")
    return check_kernel(spec, Options(level="quick", device="cpu"))


def test_inline_asm_is_an_interpreter_gap_not_a_crash(interpreted, tmp_path):
    report = _check(tmp_path, "inline_asm")
    assert report.findings == [] and report.error is None, (report.findings, report.error)
    value = report.cells[("f32", "value")]
    assert value.skipped and "inline PTX" in value.reason, value
    assert report.verdict == "unchecked"  # nothing was judged: never a pass


def test_an_api_the_installed_triton_removed_leaves_its_cases_out_and_judges_the_rest(interpreted, tmp_path):
    import triton
    import triton.language as tl

    @triton.jit
    def probe(x):
        tl.make_block_ptr(x, (1,), (1,), (0,), (1,), (0,))

    import torch

    try:
        probe[(1,)](torch.zeros(1))
    except Exception as e:  # noqa: BLE001 - what this Triton does with a block pointer
        if "removed" not in repr(e):
            raise
    else:
        pytest.skip(f"Triton {triton.__version__} still provides tl.make_block_ptr (removed in 3.9)")
    report = _check(tmp_path, "block_ptr")
    assert report.findings == [] and report.error is None, (report.findings, report.error)
    gaps = [n for n in report.notes if "does not provide" in str(n)]
    assert gaps and all("make_block_ptr" in str(n) or "Block pointers" in str(n) for n in gaps), report.notes
    assert report.cells[("f32", "value")].status == "pass"  # the rows past 64 columns took the plain loads
    assert report.verdict == "pass"


def test_a_not_implemented_error_of_the_launcher_is_still_a_refusal():
    """Only NotImplementedError raised by triton.language itself is a missing API; the user's own is the kernel's."""
    from verifier.battery.gate import after_run
    from verifier.launch.harness import KernelFault
    from verifier.spec import TritonKernel, dtypes

    spec = TritonKernel(name="t", op="reduce_sum", module="m.py", launcher="launch", dtypes=[dtypes("f32")])
    try:
        raise NotImplementedError("this shape is not implemented")
    except NotImplementedError as e:
        assert after_run(spec, dtypes("f32"), "c", "cpu", fault=KernelFault(e)) is None
        assert after_run(spec, dtypes("f32"), "c", "cuda", fault=KernelFault(e)) is None
