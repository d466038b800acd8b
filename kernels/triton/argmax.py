"""Each row's argmax (op row_argmax, greedy sampling): one program per row, the row read in BLOCK-column tiles.

Lane l keeps the best (value, column) of the columns l, l + BLOCK, ...: a later column replaces it only when strictly
larger (or a NaN over a number: torch ranks NaN largest), so a lane keeps its first maximum; the first valid column
always replaces the start (an all -inf row picks column 0). The lanes are merged exactly: the row's maximum (a NaN if
any lane holds one), then the smallest column among the lanes holding it: ties='first', as torch.argmax. Compared in
fp32, which holds every f32 / f16 / bf16 input exactly; -0 equals +0 under these comparisons. Column offsets int32
(N < 2^31), the row offset int64. The value output (optional) is x at the pick.
"""
import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _pick(x_ptr, N, stride_x, LAST_TIE: tl.constexpr, BF16_CMP: tl.constexpr, NO_TAIL: tl.constexpr,
          BLOCK: tl.constexpr):
    """(the row's maximum, its first column) for program_id(0)'s row. The three switches are the defect twins of
    kernels/defects/triton/argmax_defects.py (all False here: the correct kernel)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    at = tl.full([BLOCK], -1, tl.int32)
    end = N
    if NO_TAIL:
        end = N - N % BLOCK  # a defect: whole tiles only, the last partial tile never read
    for start in range(0, end, BLOCK):
        c = start + cols
        live = c < N
        v = tl.load(x_ptr + row * stride_x + c, mask=live, other=float("-inf")).to(tl.float32)
        if BF16_CMP:
            v = v.to(tl.bfloat16).to(tl.float32)  # a defect: compared in bf16
        if LAST_TIE:
            take = (v >= best) | (v != v)  # a defect: a later tie replaces the kept one
        else:
            take = (v > best) | ((v != v) & (best == best))
        take = live & (take | (at < 0))
        best = tl.where(take, v, best)
        at = tl.where(take, c, at)
    has_nan = tl.sum((best != best).to(tl.int32), 0) > 0
    mx = tl.max(tl.where(best != best, float("-inf"), best), 0)
    hit = tl.where(has_nan, best != best, best == mx) & (at >= 0)
    if LAST_TIE:
        first = tl.max(tl.where(hit, at, -1), 0)
    else:
        first = tl.min(tl.where(hit, at, 2147483647), 0)
    first = tl.where(first < 0, 0, first)
    first = tl.where(first == 2147483647, 0, first)  # N = 0 never comes; a row with no live column: 0
    mx = tl.where(has_nan, float("nan"), mx)
    return mx, first, row


@triton.jit
def row_argmax_kernel(x_ptr, index_ptr, value_ptr, N, stride_x, VALUE: tl.constexpr, BLOCK: tl.constexpr,
                      LAST_TIE: tl.constexpr = False, BF16_CMP: tl.constexpr = False, NO_TAIL: tl.constexpr = False):
    mx, first, row = _pick(x_ptr, N, stride_x, LAST_TIE, BF16_CMP, NO_TAIL, BLOCK)
    tl.store(index_ptr + row, first.to(index_ptr.dtype.element_ty))
    if VALUE:
        tl.store(value_ptr + row, mx.to(value_ptr.dtype.element_ty))


def _block(N):
    return min(TILE, triton.next_power_of_2(max(N, 16)))


def launch(inputs, outputs, params, dtypes, **defect):
    x, index = inputs["x"], outputs["index"]
    value = outputs.get("value")
    M, N = x.shape
    block = _block(N)
    return row_argmax_kernel[(M,)](x, index, index if value is None else value, N, x.stride(0),
                                   VALUE=value is not None, BLOCK=block, num_warps=4 if block < 2048 else 8, **defect)
