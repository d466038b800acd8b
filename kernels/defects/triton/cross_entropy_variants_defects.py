"""Cross-entropy variant defects; correct twins: kernels/triton/cross_entropy_variants.py (triton-ce-mean,
triton-ce-variants), of which these are copies with one pitfall switched on.

launch_mean_over_m: the batch mean divides by M, not by the number of non-ignored labels (PyTorch's mean): right on
a batch without ignore_index (every randn test), wrong by M / n on a padded one.
launch_smoothing_n_minus_1: label smoothing spread over the N - 1 other classes (sum over all N / (N - 1)): the
target's share counted as if it were excluded.
launch_softcap_after_max: the running max taken on the raw logits, the softcap applied after it: exp(cap(x) - m)
is still exact math on ordinary logits (any shift cancels), but on logits past cap it underflows to 0 and
log(0) = -inf.
"""
import torch
import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _softcap(x, cap):
    y = x / cap
    e = tl.exp(-2.0 * tl.abs(y))
    t = (1.0 - e) / (1.0 + e)
    return cap * tl.where(y < 0, -t, t)


@triton.jit
def ce_rows_bad_kernel(x_ptr, labels_ptr, loss_ptr, N, stride_x, ignore_index, eps, z, cap, BLOCK: tl.constexpr,
                       CAP: tl.constexpr, SMOOTH: tl.constexpr, ZLOSS: tl.constexpr, N_MINUS_1: tl.constexpr,
                       CAP_AFTER_MAX: tl.constexpr):
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
        raw = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        x = raw
        if CAP:
            x = _softcap(raw, cap)
        if SMOOTH:
            sx += tl.sum(tl.where(mask, x, 0.0), 0)
        x = tl.where(mask, x, -float("inf"))
        if CAP_AFTER_MAX:  # the pitfall: the max of the raw logits
            m_new = tl.maximum(m, tl.max(tl.where(mask, raw, -float("inf")), 0))
        else:
            m_new = tl.maximum(m, tl.max(x, 0))
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        l = l * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), 0)
        m = m_new
    x_t = tl.load(x_row + tl.where(ignored, 0, label)).to(tl.float32)
    if CAP:
        x_t = _softcap(x_t, cap)
    lse = m + tl.log(l)
    loss = lse - x_t
    if SMOOTH:
        if N_MINUS_1:  # the pitfall: the uniform share over N - 1 classes
            loss = (1.0 - eps) * loss + eps * (lse - sx / (N - 1))
        else:
            loss = (1.0 - eps) * loss + eps * (lse - sx / N)
    if ZLOSS:
        loss += z * lse * lse
    tl.store(loss_ptr + row, tl.where(ignored, 0.0, loss))


@triton.jit
def ce_mean_over_m_kernel(rows_ptr, out_ptr, M, BLOCK: tl.constexpr):
    idx = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, M, BLOCK):
        acc += tl.load(rows_ptr + start + idx, mask=start + idx < M, other=0.0)
    tl.store(out_ptr, tl.sum(acc, 0) / M)  # the pitfall: M, not the count of non-ignored labels


def _rows(x, labels, out, params, n_minus_1=False, cap_after_max=False):
    M, N = x.shape
    eps, z, cap = float(params["label_smoothing"]), float(params["z_loss"]), float(params["softcap"])
    block = min(TILE, triton.next_power_of_2(N))
    ce_rows_bad_kernel[(M,)](x, labels, out, N, x.stride(0), int(params["ignore_index"]), eps, z,
                             cap if cap > 0 else 1.0, BLOCK=block, CAP=cap > 0, SMOOTH=eps > 0, ZLOSS=z > 0,
                             N_MINUS_1=n_minus_1, CAP_AFTER_MAX=cap_after_max,
                             num_warps=max(1, min(16, block // 256)))


def launch_mean_over_m(inputs, outputs, params, dtypes):
    x = inputs["x"]
    rows = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
    _rows(x, inputs["labels"], rows, params)
    ce_mean_over_m_kernel[(1,)](rows, outputs["loss"], x.shape[0], BLOCK=min(1024, triton.next_power_of_2(x.shape[0])))


def launch_smoothing_n_minus_1(inputs, outputs, params, dtypes):
    _rows(inputs["x"], inputs["labels"], outputs["loss"], params, n_minus_1=True)


def launch_softcap_after_max(inputs, outputs, params, dtypes):
    _rows(inputs["x"], inputs["labels"], outputs["loss"], params, cap_after_max=True)
