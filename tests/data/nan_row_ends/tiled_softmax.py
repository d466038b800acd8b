"""A softmax whose rows of one tile are held whole (max, exp, sum: a NaN propagates) and whose longer rows are read
tile by tile, each lane keeping an online max m (from -inf) and sum z. ``skips_nan``
guards lanes whose max is still -inf with ``where(m_new == -inf, z, ...)`` and takes the max with tl.maximum
(maxnum: maxnum(NaN, -inf) = -inf), so a NaN in the first tile a lane reads is skipped and the row comes out finite;
``keeps_nan`` propagates it (tl.maximum with PropagateNan.ALL). tests/test_nan_row_ends.py."""
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, N, TILE: tl.constexpr, KEEP_NAN: tl.constexpr, ONE_TILE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * N
    y_ptr += row * N
    if ONE_TILE:
        o = tl.arange(0, TILE)
        x = tl.load(x_ptr + o, mask=o < N, other=float("-inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, 0))
        tl.store(y_ptr + o, (e / tl.sum(e, 0)).to(y_ptr.dtype.element_ty), mask=o < N)
        return
    m = tl.full([TILE], float("-inf"), tl.float32)
    z = tl.zeros([TILE], tl.float32)
    for start in range(0, N, TILE):
        o = start + tl.arange(0, TILE)
        x = tl.load(x_ptr + o, mask=o < N, other=float("-inf")).to(tl.float32)
        if KEEP_NAN:
            m_new = tl.maximum(m, x, propagate_nan=tl.PropagateNan.ALL)
        else:
            m_new = tl.maximum(m, x)
        z = tl.where(m_new == float("-inf"), z, z * tl.exp(m - m_new) + tl.exp(x - m_new))
        m = m_new
    if KEEP_NAN:
        mr = tl.max(tl.where(m != m, float("nan"), m), 0)
        mr = tl.where(tl.sum((m != m).to(tl.int32), 0) > 0, float("nan"), mr)
    else:
        mr = tl.max(m, 0)
    zr = tl.sum(tl.where(m == float("-inf"), 0.0, z * tl.exp(m - mr)), 0)
    for start in range(0, N, TILE):
        o = start + tl.arange(0, TILE)
        x = tl.load(x_ptr + o, mask=o < N, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + o, (tl.exp(x - mr) / zr).to(y_ptr.dtype.element_ty), mask=o < N)


def skips_nan(inputs, outputs, params, dt):
    x = inputs["x"]
    _softmax[(x.shape[0],)](x, outputs["y"], x.shape[1], TILE=4096, KEEP_NAN=False,
                                 ONE_TILE=x.shape[1] <= 4096)


def keeps_nan(inputs, outputs, params, dt):
    x = inputs["x"]
    _softmax[(x.shape[0],)](x, outputs["y"], x.shape[1], TILE=4096, KEEP_NAN=True,
                                 ONE_TILE=x.shape[1] <= 4096)
