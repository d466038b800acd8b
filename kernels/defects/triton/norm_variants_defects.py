"""Defective norm-variant kernels (issue #37), Triton; their twins are the bundled kernels of
kernels/triton/norm_variants.py. Each reproduces a pitfall seen in production code:

- launch_group_norm_naive_var: var = E[x²] - E[x]² over the group in fp32 (Liger-Kernel 0.8.5's GroupNorm forward
  does this): on a group of 1000 + a few ULPs the variance is rounding noise;
- launch_group_norm_channels_last: the group's columns read with stride G (column g + j·G), as if the row were
  channels-last (HW, C) while w/b and the output use channel-major: every group mixes channels of all groups;
- launch_row_amax_drops_nan: max |x| by compare-and-select (fmaxf's semantics): a NaN in the row is dropped and the
  largest number reported, where torch.amax gives NaN;
- launch_var_mean_naive: var_mean with the one-pass E[x²] - E[x]² variance;
- launch_l2norm_eps_in_sqrt: y = x / sqrt(Σx² + eps) instead of x / max(||x||, eps): equal on ordinary rows (randn
  agrees to 1e-13), off on rows of norm near or below sqrt(eps)·10^3.
"""
import triton
import triton.language as tl

TILE = 4096


@triton.jit
def group_norm_defect_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, G, GS, CS, stride_x, stride_y, eps,
                             NAIVE: tl.constexpr, CHANNELS_LAST: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    g = tl.program_id(1).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    xr = x_ptr + row * stride_x
    s = tl.zeros([BLOCK], dtype=tl.float32)
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, GS, BLOCK):
        j = start + cols
        src = j * G + g if CHANNELS_LAST else g * GS + j
        x = tl.load(xr + src, mask=j < GS, other=0.0).to(tl.float32)
        s += x
        sq += x * x
    mean = tl.sum(s, 0) / GS
    if NAIVE:
        var = tl.sum(sq, 0) / GS - mean * mean
    else:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, GS, BLOCK):
            j = start + cols
            src = j * G + g if CHANNELS_LAST else g * GS + j
            d = tl.where(j < GS, tl.load(xr + src, mask=j < GS, other=0.0).to(tl.float32) - mean, 0.0)
            acc += d * d
        var = tl.sum(acc, 0) / GS
    rstd = 1.0 / tl.sqrt(tl.maximum(var, 0.0) + eps)
    for start in range(0, GS, BLOCK):
        j = start + cols
        mask = j < GS
        src = j * G + g if CHANNELS_LAST else g * GS + j
        ch = (g * GS + j) // CS
        y = (tl.load(xr + src, mask=mask, other=0.0).to(tl.float32) - mean) * rstd
        y = y * tl.load(w_ptr + ch, mask=mask, other=1.0).to(tl.float32) \
            + tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + g * GS + j, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def row_amax_drops_nan_kernel(x_ptr, y_ptr, N, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        a = tl.abs(tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < N, other=0.0).to(tl.float32))
        m = tl.where(a > m, a, m)  # fmaxf(m, a): NaN compares false and is dropped
    tl.store(y_ptr + row, tl.max(m, 0).to(y_ptr.dtype.element_ty))


@triton.jit
def var_mean_naive_kernel(x_ptr, mean_ptr, var_ptr, N, stride_x, denom, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < N, other=0.0).to(tl.float32)
        s += x
        sq += x * x
    mean = tl.sum(s, 0) / N
    var = (tl.sum(sq, 0) - N * mean * mean) / denom  # one pass: cancels on mean >> std rows
    tl.store(mean_ptr + row, mean.to(mean_ptr.dtype.element_ty))
    tl.store(var_ptr + row, tl.maximum(var, 0.0).to(var_ptr.dtype.element_ty))


@triton.jit
def l2norm_eps_in_sqrt_kernel(x_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < N, other=0.0).to(tl.float32)
        acc += x * x
    inv = 1.0 / tl.sqrt(tl.sum(acc, 0) + eps)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + start + cols, (x * inv).to(y_ptr.dtype.element_ty), mask=mask)


def _block(n):
    return min(TILE, triton.next_power_of_2(max(n, 1)))


def _warps(block):
    return max(1, min(8, block // 256))


def _group_norm(inputs, outputs, params, naive, channels_last):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    G, C = int(params["groups"]), int(params["channels"])
    block = _block(N // G)
    return group_norm_defect_kernel[(M, G)](x, inputs["w"], inputs["b"], y, N, G, N // G, N // C, x.stride(0),
                                            y.stride(0), float(params["eps"]), NAIVE=naive,
                                            CHANNELS_LAST=channels_last, BLOCK=block, num_warps=_warps(block))


def launch_group_norm_naive_var(inputs, outputs, params, dtypes):
    return _group_norm(inputs, outputs, params, True, False)


def launch_group_norm_channels_last(inputs, outputs, params, dtypes):
    return _group_norm(inputs, outputs, params, False, True)


def launch_row_amax_drops_nan(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    block = _block(x.shape[1])
    return row_amax_drops_nan_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=block,
                                                    num_warps=_warps(block))


def launch_var_mean_naive(inputs, outputs, params, dtypes):
    x = inputs["x"]
    M, N = x.shape
    block = _block(N)
    return var_mean_naive_kernel[(M,)](x, outputs["mean"], outputs["var"], N, x.stride(0),
                                       float(N - int(params["correction"])), BLOCK=block, num_warps=_warps(block))


def launch_l2norm_eps_in_sqrt(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    block = _block(x.shape[1])
    return l2norm_eps_in_sqrt_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                                    float(params["eps"]), BLOCK=block, num_warps=_warps(block))
