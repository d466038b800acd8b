"""A library kernel calling ``.to`` on a Python float argument (Liger's norms do, ``eps.to(tl.float32)``): compiled
Triton passes the float as an fp32 scalar, the interpreter as a plain float, which raises (tests/test_callable_triton.py)."""
import triton
import triton.language as tl


@triton.jit
def _rowsum_scaled(x_ptr, y_ptr, N, stride, one, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, (tl.sum(x, axis=0) * one.to(tl.float32)).to(y_ptr.dtype.element_ty))


def row_sum(x, y):
    _rowsum_scaled[(x.shape[0],)](x, y, x.shape[1], x.stride(0), 1.0, BLOCK=triton.next_power_of_2(x.shape[1]))
