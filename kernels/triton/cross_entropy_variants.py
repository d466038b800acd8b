"""Cross entropy with its variants (ops cross_entropy and cross_entropy_reduced): label smoothing, z_loss, softcap,
and the reduction over the rows ('mean' over the non-ignored rows, 'sum').

One program per row, tiled over columns (vocabulary rows): the logits capped first when softcap > 0, as
cap·tanh(x/cap) with tanh = (1 - e)/(1 + e), e = exp(-2|y|) (no overflow; +-inf give +-cap, NaN stays NaN); the
running max m and sum l = sum(exp(x - m)) rescaled when the max grows, and the row sum of the capped logits for the
smoothing term. lse = m + log(l); loss = (1 - eps)·(lse - x[label]) + eps·(lse - sum/N) + z·lse². Ignored rows
store 0 without reading their logits' value. The reduced op writes the per-row losses to a float32 buffer, and a
second program sums it in a fixed order and divides by the count of non-ignored labels (0/0 = NaN: a mean over no
row, as PyTorch): the same input gives the same bits.
"""
import torch
import triton
import triton.language as tl

TILE = 4096  # columns per iteration (rows); rows per iteration (the batch sum)


@triton.jit
def _row_max_nan(x):
    m = tl.max(x, 0)  # tl.max drops NaN: put it back
    return tl.where(tl.sum((x != x).to(tl.int32), 0) > 0, float("nan"), m)


@triton.jit
def _softcap(x, cap):
    y = x / cap
    e = tl.exp(-2.0 * tl.abs(y))
    t = (1.0 - e) / (1.0 + e)
    return cap * tl.where(y < 0, -t, t)


@triton.jit
def ce_rows_kernel(x_ptr, labels_ptr, loss_ptr, N, stride_x, ignore_index, eps, z, cap, BLOCK: tl.constexpr,
                   CAP: tl.constexpr, SMOOTH: tl.constexpr, ZLOSS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    label = tl.load(labels_ptr + row).to(tl.int64)
    ignored = label == ignore_index
    cols = tl.arange(0, BLOCK)
    m = tl.full([], -float("inf"), tl.float32)
    l = tl.full([], 0.0, tl.float32)
    sx = tl.full([], 0.0, tl.float32)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        if CAP:
            x = _softcap(x, cap)
        if SMOOTH:
            sx += tl.sum(tl.where(mask, x, 0.0), 0)
        x = tl.where(mask, x, -float("inf"))
        m_new = tl.maximum(m, _row_max_nan(x), propagate_nan=tl.PropagateNan.ALL)
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)  # all -inf so far: nothing to rescale
        l = l * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), 0)
        m = m_new
    x_t = tl.load(x_row + tl.where(ignored, 0, label)).to(tl.float32)
    if CAP:
        x_t = _softcap(x_t, cap)
    lse = m + tl.log(l)
    loss = lse - x_t
    if SMOOTH:
        loss = (1.0 - eps) * loss + eps * (lse - sx / N)
    if ZLOSS:
        loss += z * lse * lse
    tl.store(loss_ptr + row, tl.where(ignored, 0.0, loss))


@triton.jit
def ce_batch_kernel(rows_ptr, labels_ptr, out_ptr, M, ignore_index, MEAN: tl.constexpr, BLOCK: tl.constexpr):
    idx = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    count = tl.zeros([BLOCK], tl.int32)
    for start in range(0, M, BLOCK):
        mask = start + idx < M
        acc += tl.load(rows_ptr + start + idx, mask=mask, other=0.0)
        lab = tl.load(labels_ptr + start + idx, mask=mask, other=ignore_index).to(tl.int64)
        count += (mask & (lab != ignore_index)).to(tl.int32)
    total = tl.sum(acc, 0)
    if MEAN:
        total = total / tl.sum(count, 0).to(tl.float32)  # no row counted: 0/0 = NaN, as PyTorch
    tl.store(out_ptr, total)


def launch(inputs, outputs, params, dtypes, block=None):
    x, labels, loss = inputs["x"], inputs["labels"], outputs["loss"]
    M, N = x.shape
    reduction = params.get("reduction", "none")
    eps, z, cap = float(params["label_smoothing"]), float(params["z_loss"]), float(params["softcap"])
    block = block or min(TILE, triton.next_power_of_2(N))
    rows = loss if reduction == "none" else torch.empty(M, device=x.device, dtype=torch.float32)
    ce_rows_kernel[(M,)](x, labels, rows, N, x.stride(0), int(params["ignore_index"]), eps, z, cap if cap > 0 else 1.0,
                         BLOCK=block, CAP=cap > 0, SMOOTH=eps > 0, ZLOSS=z > 0, num_warps=max(1, min(16, block // 256)))
    if reduction != "none":
        ce_batch_kernel[(1,)](rows, labels, loss, M, int(params["ignore_index"]), MEAN=reduction == "mean",
                              BLOCK=min(1024, triton.next_power_of_2(M)), num_warps=4)
