"""Cross-entropy defects; correct twin of both: triton-cross-entropy (kernels/triton/cross_entropy.py).

launch_no_max_sub: lse = log(sum(exp(x))) without the max subtraction: exp overflows to inf past 88.7
(fp32 math), so the loss is inf (or NaN) on large logits.
launch_labels_as_int32: a kernel written for 32-bit labels handed torch's int64 targets: row i reads word i
of the label buffer (the low or high half of label i // 2), so most rows take another row's class, 0 or -1
(clamped into the row here, so the defect is a wrong value, not an out-of-range read)."""
import triton
import triton.language as tl

TILE = 4096


@triton.jit
def cross_entropy_no_max_kernel(x_ptr, labels_ptr, loss_ptr, N, stride_x, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    label = tl.load(labels_ptr + row).to(tl.int64)
    ignored = label == ignore_index
    cols = tl.arange(0, BLOCK)
    s = tl.full([], 0.0, tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        s += tl.sum(tl.exp(x), 0)
    x_t = tl.load(x_row + tl.where(ignored, 0, label)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(ignored, 0.0, tl.log(s) - x_t))


def launch_no_max_sub(inputs, outputs, params, dtypes):
    x, labels, loss = inputs["x"], inputs["labels"], outputs["loss"]
    M, N = x.shape
    block = min(TILE, triton.next_power_of_2(N))
    return cross_entropy_no_max_kernel[(M,)](x, labels, loss, N, x.stride(0), int(params["ignore_index"]),
                                             BLOCK=block, num_warps=max(1, min(16, block // 256)))


@triton.jit
def cross_entropy_label_as_i32_kernel(x_ptr, labels_ptr, loss_ptr, N, stride_x, ignore_index, BLOCK: tl.constexpr):
    # The int64 label buffer read as int32: row i takes word i, the low or high half of label i // 2.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    label = tl.load(labels_ptr.to(tl.pointer_type(tl.int32)) + row).to(tl.int64)
    ignored = label == ignore_index
    cols = tl.arange(0, BLOCK)
    m = tl.full([], -float("inf"), tl.float32)
    s = tl.full([], 0.0, tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), 0)
        m = m_new
    safe = tl.minimum(tl.maximum(label, 0), N - 1)  # keep the wrong index inside the row
    x_t = tl.load(x_row + tl.where(ignored, 0, safe)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(ignored, 0.0, (m + tl.log(s)) - x_t))


def launch_labels_as_int32(inputs, outputs, params, dtypes):
    x, labels, loss = inputs["x"], inputs["labels"], outputs["loss"]
    M, N = x.shape
    block = min(TILE, triton.next_power_of_2(N))
    return cross_entropy_label_as_i32_kernel[(M,)](x, labels, loss, N, x.stride(0), int(params["ignore_index"]),
                                                   BLOCK=block, num_warps=max(1, min(16, block // 256)))
