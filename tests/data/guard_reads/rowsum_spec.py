"""Row sums for tests/test_guard_reads.py: one correct, one that also loads the element before its row and multiplies
it by 0 (FlagGems' cross entropy did so for ignored rows, x[row·C - 100]): its values are right, only the read is
wrong — on row 0 it lies before x, in the harness's guard band."""
import triton
import triton.language as tl

from verifier.spec import TritonKernel, dtypes, max_row


@triton.jit
def rowsum(x_ptr, y_ptr, N, stride_x, PEEK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
    total = tl.sum(x, 0)
    if PEEK:  # the defect: one element before the row, read and discarded
        total += 0.0 * tl.load(x_ptr + row * stride_x - 1).to(tl.float32)
    tl.store(y_ptr + row, total)


def _launch(peek):
    def launch(inputs, outputs, params, dt):
        x, y = inputs["x"], outputs["y"]
        M, N = x.shape
        rowsum[(M,)](x, y, N, x.stride(0), PEEK=peek, BLOCK=triton.next_power_of_2(N))
    return launch


launch_ok, launch_peek = _launch(False), _launch(True)
KERNELS = [TritonKernel(name=f"rowsum-{w}", op="reduce_sum", module=__file__, launcher=f"launch_{w}",
                        dtypes=[dtypes("f32")], supports=max_row(4096), math_mode="triton_approx")
           for w in ("ok", "peek")]
