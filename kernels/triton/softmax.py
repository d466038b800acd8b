"""Row softmax, one program per row, the whole row in one block (N <= MAX_N).

fp32 math whatever the I/O dtype. Semantics as torch.softmax: a fully -inf row gives NaN
(-inf - -inf), a partial -inf row gives exact zeros there, NaN anywhere in a row makes the row NaN.
"""
import triton
import triton.language as tl

# One block of fp32 per row, held in registers: past 32768 columns it spills to local memory on sm_90 (ptxas:
# 256-440 bytes at N = 65536, Triton 3.6); longer rows: online_softmax.py.
MAX_N = 32768


@triton.jit
def _max_nan(a, b):
    # tl.max uses maxnum, which drops NaN; torch.amax propagates it. The output would be NaN
    # through the sum anyway, but m itself then matches torch (and the PTX uses max.NaN.f32).
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _row_max_nan(x):
    # NaN-propagating row max from native reductions: tl.reduce with a custom combine runs
    # element by element in Python under the interpreter (30 s for a 152064 row).
    m = tl.max(x, 0)
    return tl.where(tl.sum((x != x).to(tl.int32), 0) > 0, float("nan"), m)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    m = _row_max_nan(x)
    # Padding lanes hold -inf: exp(-inf - m) = 0 unless m = -inf, and then the row is NaN anyway.
    e = tl.exp(x - m)
    y = e / tl.sum(e, 0)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def num_warps(block: int) -> int:
    return max(1, min(16, block // 256))


def launch(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"softmax: N={N} > {MAX_N} does not fit one block's registers; use online_softmax.py")
    block = triton.next_power_of_2(N)
    return softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=block, num_warps=num_warps(block))
