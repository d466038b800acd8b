"""Defect twins of kernels/triton/masked_softmax.py (scale 0.125, per-row mask, causal), each one bug public
trackers report: a causal mask off by one column, a fully masked row giving NaN (0/0) where zeros are declared, and
the row max taken before the mask is added (exact in real arithmetic, any shift cancels; but a masked column holding
the largest logit pushes every live exp toward underflow: 0 / 0 or lost digits on large logits).
"""
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, mask_ptr, y_ptr, N, stride_x, stride_mask, stride_y, scale,
            OFF_BY_ONE: tl.constexpr, NAN_ROWS: tl.constexpr, MAX_BEFORE_MASK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inb = cols < N
    z = tl.load(x_ptr + row * stride_x + cols, mask=inb, other=0.0).to(tl.float32) * scale
    raw_max = tl.max(tl.where(inb, z, -float("inf")), 0)  # bug when MAX_BEFORE_MASK: the max of the unmasked logits
    z = z + tl.load(mask_ptr + row * stride_mask + cols, mask=inb, other=0.0).to(tl.float32)
    if OFF_BY_ONE:  # bug: '>=' keeps the diagonal out (row i attends to j < i only)
        z = tl.where(cols >= row, -float("inf"), z)
    else:
        z = tl.where(cols > row, -float("inf"), z)
    z = tl.where(inb, z, -float("inf"))
    m = tl.max(z, 0)
    if MAX_BEFORE_MASK:
        m = tl.where(m == -float("inf"), m, raw_max)
    if not NAN_ROWS:  # bug when NAN_ROWS: no guard, a fully masked row is exp(-inf - -inf) = NaN
        m = tl.where(m == -float("inf"), 0.0, m)
    e = tl.exp(z - m)
    s = tl.sum(e, 0)
    y = e / s if NAN_ROWS else tl.where(s > 0, e / s, 0.0)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=inb)


def _launch(inputs, outputs, params, off_by_one=False, nan_rows=False, max_before_mask=False):
    x, mask, y = inputs["x"], inputs["mask"], outputs["y"]
    M, N = x.shape
    block = triton.next_power_of_2(N)
    return _kernel[(M,)](x, mask, y, N, x.stride(0), mask.stride(0), y.stride(0), float(params["scale"]),
                         OFF_BY_ONE=off_by_one, NAN_ROWS=nan_rows, MAX_BEFORE_MASK=max_before_mask, BLOCK=block,
                         num_warps=max(1, min(16, block // 256)))


def launch_causal_off_by_one(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, off_by_one=True)


def launch_masked_rows_nan(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, nan_rows=True)


def launch_max_before_mask(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, max_before_mask=True)
