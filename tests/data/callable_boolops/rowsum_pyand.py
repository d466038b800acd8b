"""A library module as users import one: a row sum whose mask is built with Python `and` on block tensors (FlagGems
writes masks so). Compiled Triton makes it an element-wise and; Triton's interpreter runs `a and b` as Python and
gives b, so interpreted as Triton leaves it, the mask lets the tail read past the row; the verifier's rewrite
(verifier.launch.triton_boolops) runs it as compiled (tests/test_callable_triton.py)."""
import triton
import triton.language as tl


@triton.jit
def _rowsum_pyand(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=(offs < N) and (offs >= 0), other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


def row_sum(x, y):
    _rowsum_pyand[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
