"""A row sum that takes R rows per program once the batch is large and the rows short (R = 2 from 2048 rows when
N < 64, as attorch's kernels pick it). The defect twin sizes its grid M // R (floor): with an odd M its last row is
never summed. Every catalogue case below 2048 rows runs R = 1, where both are right
(tests/test_many_short_rows.py)."""
import triton
import triton.language as tl


@triton.jit
def _rowsum(x_ptr, y_ptr, M, N, stride, R: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for r in tl.static_range(R):
        row = tl.program_id(0).to(tl.int64) * R + r  # 64-bit: row * stride passes 2^31 elements
        if row < M:
            x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
            tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


def _launch(inputs, outputs, floor):
    x = inputs["x"]
    M, N = x.shape
    R = 2 if M >= 2048 and N < 64 else 1
    grid = M // R if floor else triton.cdiv(M, R)
    _rowsum[(grid,)](x, outputs["y"], M, N, x.stride(0), R=R, BLOCK=triton.next_power_of_2(N))


def launch_ok(inputs, outputs, params, dt):
    _launch(inputs, outputs, floor=False)


def launch_floor(inputs, outputs, params, dt):
    _launch(inputs, outputs, floor=True)
