"""A correct row sum whose kernel assumes ``pid > 0`` (false in program 0), as aiter's per-token quant kernels do
(tests/test_false_assume.py); its twin assumes ``pid >= 0``."""
import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, y_ptr, N, stride, STRICT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if STRICT:
        tl.assume(pid > 0)
    else:
        tl.assume(pid >= 0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid.to(tl.int64) * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + pid, tl.sum(x, 0).to(y_ptr.dtype.element_ty))


def _go(inputs, outputs, strict):
    x = inputs["x"]
    M, N = x.shape
    row_sum[(M,)](x, outputs["y"], N, x.stride(0), STRICT=strict, BLOCK=triton.next_power_of_2(N))


def strict(inputs, outputs, params, dt):
    _go(inputs, outputs, True)


def loose(inputs, outputs, params, dt):
    _go(inputs, outputs, False)
