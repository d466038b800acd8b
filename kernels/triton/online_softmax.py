"""Row softmax for rows of any length (e.g. vocabulary rows of 152064): one program per row,
tiled over columns.

Pass 1 keeps the running max m and the running sum l = sum(exp(x - m)), rescaling l by
exp(m_old - m_new) when the max grows; pass 2 writes exp(x - m) / l. fp32 math.
Semantics as torch.softmax (fully -inf row: NaN; partial -inf: 0; NaN propagates).
"""
import triton
import triton.language as tl

TILE = 4096  # columns per iteration; launch(..., block=64) lowers it (tests tile small rows)


@triton.jit
def _max_nan(a, b):
    # tl.max uses maxnum, which drops NaN; torch.amax propagates it.
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _row_max_nan(x):
    # NaN-propagating row max from native reductions: tl.reduce with a custom combine runs
    # element by element in Python under the interpreter (30 s for a 152064 row).
    m = tl.max(x, 0)
    return tl.where(tl.sum((x != x).to(tl.int32), 0) > 0, float("nan"), m)


@triton.jit
def online_softmax_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK)
    m = tl.full([], -float("inf"), tl.float32)
    l = tl.full([], 0.0, tl.float32)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = _max_nan(m, _row_max_nan(x))
        # While every value so far is -inf there is nothing to rescale: subtract 0, not -inf,
        # so that l stays 0 instead of becoming NaN (-inf - -inf) before a finite tile arrives.
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        l = l * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), 0)
        m = m_new
    # Fully -inf row: m = -inf, l = 0, so exp(-inf - -inf) / 0 = NaN as in torch.
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m) / l
        tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(inputs, outputs, params, dtypes, block=None):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    block = block or min(TILE, triton.next_power_of_2(N))
    if block & (block - 1):
        raise ValueError(f"online_softmax: block={block} is not a power of two")
    warps = max(1, min(16, block // 256))
    return online_softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=block, num_warps=warps)
