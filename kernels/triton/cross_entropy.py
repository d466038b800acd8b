"""Cross entropy over the vocabulary, per row: loss = logsumexp(x) - x[label], float32, no reduction.

One program per row, tiled over columns (vocabulary rows of 152064): the running max m and the running
sum l = sum(exp(x - m)), rescaled by exp(m_old - m_new) when the max grows; then lse = m + log(l) and
loss = lse - x[label]. A row whose label is ignore_index stores 0 without reading its logits' value.
Semantics as torch's cross_entropy(reduction='none'): NaN or +inf in a row, or an all -inf row, give
NaN; a -inf logit at the label gives +inf. Labels are int64 or int32 (read in their own width).
"""
import triton
import triton.language as tl

TILE = 4096  # columns per iteration; launch(..., block=64) lowers it (tests tile small rows)


@triton.jit
def _row_max_nan(x):
    # NaN-propagating max (tl.max uses maxnum, which drops NaN), from native reductions.
    m = tl.max(x, 0)
    return tl.where(tl.sum((x != x).to(tl.int32), 0) > 0, float("nan"), m)


@triton.jit
def cross_entropy_kernel(x_ptr, labels_ptr, loss_ptr, N, stride_x, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    label = tl.load(labels_ptr + row).to(tl.int64)
    ignored = label == ignore_index
    cols = tl.arange(0, BLOCK)
    m = tl.full([], -float("inf"), tl.float32)
    l = tl.full([], 0.0, tl.float32)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, _row_max_nan(x), propagate_nan=tl.PropagateNan.ALL)
        # While every value so far is -inf there is nothing to rescale: subtract 0, not -inf.
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        l = l * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), 0)
        m = m_new
    x_t = tl.load(x_row + tl.where(ignored, 0, label)).to(tl.float32)
    loss = (m + tl.log(l)) - x_t
    tl.store(loss_ptr + row, tl.where(ignored, 0.0, loss))


def launch(inputs, outputs, params, dtypes, block=None):
    x, labels, loss = inputs["x"], inputs["labels"], outputs["loss"]
    M, N = x.shape
    block = block or min(TILE, triton.next_power_of_2(N))
    warps = max(1, min(16, block // 256))
    return cross_entropy_kernel[(M,)](x, labels, loss, N, x.stride(0), int(params["ignore_index"]), BLOCK=block,
                                      num_warps=warps)
