"""A tiled online softmax (running max from -inf, the sum rescaled by exp(m - m_new) tile after tile), as aiter's
_softmax_kernel_online and Liger's cross entropy loop over a long row (tests/test_masked_prefix.py): the defect
rescales unguarded, so a first tile of only -inf gives exp(-inf - -inf) = NaN and the whole row NaN; the twin
guards the rescale."""
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, N, sx, sy, GUARD: tl.constexpr, TILE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = -float("inf")
    s = 0.0
    for start in range(0, N, TILE):
        cols = start + tl.arange(0, TILE)
        x = tl.load(x_ptr + row * sx + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        if GUARD:
            scale = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
            e = tl.where(m_new == -float("inf"), 0.0, tl.exp(x - m_new))
        else:
            scale = tl.exp(m - m_new)
            e = tl.exp(x - m_new)
        s = s * scale + tl.sum(e, 0)
        m = m_new
    for start in range(0, N, TILE):
        cols = start + tl.arange(0, TILE)
        x = tl.load(x_ptr + row * sx + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + row * sy + cols, (tl.exp(x - m) / s).to(y_ptr.dtype.element_ty), mask=cols < N)


def _go(inputs, outputs, guard):
    x, y = inputs["x"], outputs["y"]
    _softmax[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0), GUARD=guard, TILE=16384)


def unguarded(inputs, outputs, params, dt):
    _go(inputs, outputs, False)


def guarded(inputs, outputs, params, dt):
    _go(inputs, outputs, True)
