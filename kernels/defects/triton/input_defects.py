"""Triton defects that only the inputs real callers pass expose; each is right on a fresh contiguous randn tensor.

RMSNorm, one program per row (N <= MAX_N), two switches off the correct form (``launch_rows``):
- ``launch_int32_row_offset``: ``row = tl.program_id(0)`` kept in int32 times the stride: past 2^31 elements the
  row offset wraps negative (Liger-Kernel's cross entropy shipped this);
- ``launch_ignores_stride``: row r read and written at r * N: wrong on a slice ``qkv[:, :N]``.
log_softmax, one program per row: ``launch_log_softmax`` computes (x - m) - log(s) (twin),
``launch_log_softmax_exp_log`` log(exp(x - m) / s), which is -inf once a row spans more than about 104.
Cross entropy, tiled like kernels/triton/cross_entropy.py: ``launch_ce_neg_log_p`` returns -log(softmax[label]),
+inf where the loss is a few hundred (twin: the bundled triton-cross-entropy).
"""
import triton
import triton.language as tl

MAX_N = 65536
TILE = 4096


@triton.jit
def rmsnorm_rows_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr,
                        WIDE: tl.constexpr, USE_STRIDE: tl.constexpr):
    row = tl.program_id(0)  # int32
    if WIDE:
        row = row.to(tl.int64)
    if USE_STRIDE:
        x_row, y_row = x_ptr + row * stride_x, y_ptr + row * stride_y
    else:
        x_row, y_row = x_ptr + row * N, y_ptr + row * N
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(y_row + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _rmsnorm(inputs, outputs, params, wide, use_stride):
    x, w, y = inputs["x"], inputs["w"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"rmsnorm: N={N} > {MAX_N} does not fit one block")
    block = triton.next_power_of_2(N)
    return rmsnorm_rows_kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), float(params["eps"]), BLOCK=block,
                                     WIDE=wide, USE_STRIDE=use_stride, num_warps=max(1, min(16, block // 256)))


def launch_rows(inputs, outputs, params, dtypes):
    return _rmsnorm(inputs, outputs, params, True, True)


def launch_int32_row_offset(inputs, outputs, params, dtypes):
    return _rmsnorm(inputs, outputs, params, False, True)


def launch_ignores_stride(inputs, outputs, params, dtypes):
    return _rmsnorm(inputs, outputs, params, True, False)


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr, EXP_LOG: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, 0)
    s = tl.sum(tl.exp(x - m), 0)
    if EXP_LOG:
        y = tl.log(tl.exp(x - m) / s)  # exp underflows to 0 at x - m < -104: log(0) = -inf
    else:
        y = (x - m) - tl.log(s)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _log_softmax(inputs, outputs, exp_log):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"log_softmax: N={N} > {MAX_N} does not fit one block")
    block = triton.next_power_of_2(N)
    return log_softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK=block, EXP_LOG=exp_log,
                                    num_warps=max(1, min(16, block // 256)))


def launch_log_softmax(inputs, outputs, params, dtypes):
    return _log_softmax(inputs, outputs, False)


def launch_log_softmax_exp_log(inputs, outputs, params, dtypes):
    return _log_softmax(inputs, outputs, True)


@triton.jit
def ce_neg_log_p_kernel(x_ptr, labels_ptr, loss_ptr, N, stride_x, ignore_index, BLOCK: tl.constexpr):
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
        m_new = tl.maximum(m, tl.max(x, 0))
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        l = l * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), 0)
        m = m_new
    x_t = tl.load(x_row + tl.where(ignored, 0, label)).to(tl.float32)
    loss = -tl.log(tl.exp(x_t - m) / l)  # the probability underflows to 0 once x_t is ~104 below the max
    tl.store(loss_ptr + row, tl.where(ignored, 0.0, loss))


def launch_ce_neg_log_p(inputs, outputs, params, dtypes):
    x, labels, loss = inputs["x"], inputs["labels"], outputs["loss"]
    M, N = x.shape
    block = min(TILE, triton.next_power_of_2(N))
    return ce_neg_log_p_kernel[(M,)](x, labels, loss, N, x.stride(0), int(params["ignore_index"]), BLOCK=block,
                                     num_warps=max(1, min(16, block // 256)))
