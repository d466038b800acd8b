"""A library row sum whose mask is a Python `and` with a walrus past its first operand, which the verifier's rewrite
of `and` / `or` leaves to Python (a lambda would bind the name in its own scope): the interpreter gives b (every
column), so the tail reads past the row, an interpreter gap still (tests/test_callable_triton.py)."""
import triton
import triton.language as tl


@triton.jit
def _rowsum_walrus(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=(offs < N) and (live := offs >= 0), other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(tl.where(live, x, 0.0), axis=0).to(y_ptr.dtype.element_ty))


def row_sum(x, y):
    _rowsum_walrus[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
