"""Defective variants of kernels/triton/softmax.py (one program per row, whole row in one block).

Each launcher reproduces one pitfall; the correct twin is the bundled `triton-softmax`.
- launch_no_max_sub: exp(x) / sum(exp(x)) without subtracting the row max: exp overflows to inf
  for x > 88.7 and the row becomes inf / inf = NaN.
- launch_unmasked_store: writes the row in 128-column tiles whose loads are masked but whose
  stores are not: the last tile writes up to 127 elements past the row end (into the next row,
  or past the tensor for the last row). The overrun stays under the harness's 4096-byte guard
  band, so the interpreter process itself is never corrupted.
- launch_masked_rows_zero: a fully -inf row returns zeros (the FlashAttention convention)
  instead of NaN as torch.softmax does.
"""
import triton
import triton.language as tl

MAX_N = 65536
STORE_TILE = 128


@triton.jit
def _row_max_nan(x):
    m = tl.max(x, 0)
    return tl.where(tl.sum((x != x).to(tl.int32), 0) > 0, float("nan"), m)


@triton.jit
def softmax_defect_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr, SUB_MAX: tl.constexpr,
                          MASKED_ROW_ZERO: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    if SUB_MAX:
        m = _row_max_nan(x)
        if MASKED_ROW_ZERO:
            m = tl.where(m == -float("inf"), 0.0, m)  # "avoid -inf - -inf": the row comes out 0 / 0 ...
        e = tl.exp(x - m)
    else:
        e = tl.exp(x)
    s = tl.sum(e, 0)
    if MASKED_ROW_ZERO:
        s = tl.where(s == 0.0, 1.0, s)  # ... and "avoid 0 / 0": zeros instead of NaN
    y = e / s
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_tail_store_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr, TILE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    m = _row_max_nan(x)
    s = tl.sum(tl.exp(x - m), 0)
    for start in range(0, N, TILE):
        c = start + tl.arange(0, TILE)
        xt = tl.load(x_ptr + row * stride_x + c, mask=c < N, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + row * stride_y + c, (tl.exp(xt - m) / s).to(y_ptr.dtype.element_ty))  # no mask


def _launch(inputs, outputs, sub_max=True, masked_row_zero=False):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"softmax: N={N} > {MAX_N} does not fit one block")
    block = triton.next_power_of_2(N)
    return softmax_defect_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=block, SUB_MAX=sub_max,
                                       MASKED_ROW_ZERO=masked_row_zero,
                                       num_warps=max(1, min(16, block // 256)))


def launch_no_max_sub(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, sub_max=False)


def launch_unmasked_store(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"softmax: N={N} > {MAX_N} does not fit one block")
    block = triton.next_power_of_2(N)
    return softmax_tail_store_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=block, TILE=STORE_TILE,
                                           num_warps=max(1, min(16, block // 256)))


def launch_masked_rows_zero(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, masked_row_zero=True)
