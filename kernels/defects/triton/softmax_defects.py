"""Defective variants of kernels/triton/softmax.py (one program per row, whole row in one block).

Each launcher reproduces one pitfall; the correct twin is the bundled `triton-softmax`.
- launch_no_max_sub: exp(x) / sum(exp(x)) without subtracting the row max: exp overflows to inf
  for x > 88.7 and the row becomes inf / inf = NaN.
- launch_unmasked_store: the load is masked but the store is not: the BLOCK - N padding lanes
  (BLOCK = next power of two) are written past the row end.
- launch_masked_rows_zero: a fully -inf row returns zeros (the FlashAttention convention)
  instead of NaN as torch.softmax does.
"""
import triton
import triton.language as tl

MAX_N = 65536


@triton.jit
def _row_max_nan(x):
    m = tl.max(x, 0)
    return tl.where(tl.sum((x != x).to(tl.int32), 0) > 0, float("nan"), m)


@triton.jit
def softmax_defect_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr, SUB_MAX: tl.constexpr,
                          MASK_STORE: tl.constexpr, MASKED_ROW_ZERO: tl.constexpr):
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
    if MASK_STORE:
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty))


def _launch(inputs, outputs, sub_max=True, mask_store=True, masked_row_zero=False):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"softmax: N={N} > {MAX_N} does not fit one block")
    block = triton.next_power_of_2(N)
    return softmax_defect_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=block, SUB_MAX=sub_max,
                                       MASK_STORE=mask_store, MASKED_ROW_ZERO=masked_row_zero,
                                       num_warps=max(1, min(16, block // 256)))


def launch_no_max_sub(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, sub_max=False)


def launch_unmasked_store(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, mask_store=False)


def launch_masked_rows_zero(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, masked_row_zero=True)
