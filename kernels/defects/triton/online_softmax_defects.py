"""Online softmax over 64-column tiles (kernels/triton/online_softmax.py with a small fixed tile).

- launch (twin `triton-online-softmax-tile64`): running max m and sum l, l rescaled by
  exp(m_old - m_new) whenever the max grows.
- launch_no_rescale (`defect-triton-online-softmax-no-rescale`): l += sum(exp(x - m_new)) without
  rescaling the old l: right while the first tile holds the row max, wrong on rows whose max keeps
  growing (strictly increasing rows), where every earlier tile is over-weighted.
"""
import triton
import triton.language as tl

TILE = 64


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _row_max_nan(x):
    m = tl.max(x, 0)
    return tl.where(tl.sum((x != x).to(tl.int32), 0) > 0, float("nan"), m)


@triton.jit
def online_softmax_tiles_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr, RESCALE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK)
    m = tl.full([], -float("inf"), tl.float32)
    l = tl.full([], 0.0, tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        m_new = _max_nan(m, _row_max_nan(x))
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        if RESCALE:
            l = l * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), 0)
        else:
            l = l + tl.sum(tl.exp(x - shift), 0)
        m = m_new
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(y_row + start + cols, (tl.exp(x - m) / l).to(y_ptr.dtype.element_ty), mask=mask)


def _launch(inputs, outputs, rescale):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    return online_softmax_tiles_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=TILE, RESCALE=rescale,
                                             num_warps=1)


def launch(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, True)


def launch_no_rescale(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, False)
