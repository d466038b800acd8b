"""Norm variants (issue #37), Triton, fp32 math, any N (tiles of at most TILE columns, re-read from memory):

- group_norm / group_norm_noaffine: one program per (row, group); the group's N/G contiguous columns reduced in
  two passes (the mean, then Σ(x - mean)²: no E[x²] - E[x]² cancellation), then y = (x - mean)·rstd·w[c] + b[c]
  with c = column // (N/C), the column's channel;
- row_amax: one program per row, max |x| with NaN propagating as torch.amax (a NaN count beside the max: Triton's
  max drops NaN on the GPU, as fmaxf does);
- row_mean: one program per row, Σx/N;
- var_mean: one program per row, two passes, var = Σ(x - mean)²/(N - correction) (0/0 = NaN at N = correction);
- l2norm: one program per row, y = x / max(||x||, eps), a NaN norm kept NaN (a where, not a max);
- rmsnorm_noweight / layernorm_noweight / layernorm_bias: one program per row, two passes (layernorm: the mean, then
  Σ(x - mean)²), y = (x - mean)·rstd (+ b).
"""
import triton
import triton.language as tl

TILE = 4096


@triton.jit
def group_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, GS, CS, stride_x, stride_y, eps,
                      AFFINE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    g = tl.program_id(1).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    xg = x_ptr + row * stride_x + g * GS
    yg = y_ptr + row * stride_y + g * GS
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, GS, BLOCK):
        acc += tl.load(xg + start + cols, mask=start + cols < GS, other=0.0).to(tl.float32)
    mean = tl.sum(acc, 0) / GS
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, GS, BLOCK):
        mask = start + cols < GS
        d = tl.where(mask, tl.load(xg + start + cols, mask=mask, other=0.0).to(tl.float32) - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, 0) / GS + eps)
    for start in range(0, GS, BLOCK):
        mask = start + cols < GS
        y = (tl.load(xg + start + cols, mask=mask, other=0.0).to(tl.float32) - mean) * rstd
        if AFFINE:
            ch = (g * GS + start + cols) // CS
            y = y * tl.load(w_ptr + ch, mask=mask, other=1.0).to(tl.float32) \
                + tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
        tl.store(yg + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def row_amax_kernel(x_ptr, y_ptr, N, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = tl.zeros([BLOCK], dtype=tl.float32)
    nans = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, N, BLOCK):
        a = tl.abs(tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < N, other=0.0).to(tl.float32))
        nans += (a != a).to(tl.int32)
        m = tl.where(a > m, a, m)
    res = tl.max(m, 0)
    res = tl.where(tl.sum(nans, 0) > 0, float("nan"), res)
    tl.store(y_ptr + row, res.to(y_ptr.dtype.element_ty))


@triton.jit
def row_stats_kernel(x_ptr, mean_ptr, var_ptr, N, stride_x, denom, VAR: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        acc += tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, 0) / N
    tl.store(mean_ptr + row, mean.to(mean_ptr.dtype.element_ty))
    if VAR:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, N, BLOCK):
            mask = start + cols < N
            d = tl.where(mask, tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=0.0).to(tl.float32)
                         - mean, 0.0)
            acc += d * d
        tl.store(var_ptr + row, (tl.sum(acc, 0) / denom).to(var_ptr.dtype.element_ty))


@triton.jit
def l2norm_kernel(x_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < N, other=0.0).to(tl.float32)
        acc += x * x
    norm = tl.sqrt(tl.sum(acc, 0))
    inv = 1.0 / tl.where(norm < eps, eps, norm)  # NaN < eps is false: a NaN norm stays NaN
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + start + cols, (x * inv).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def weightless_norm_kernel(x_ptr, b_ptr, y_ptr, N, stride_x, stride_y, eps, CENTER: tl.constexpr,
                           BIAS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    xr = x_ptr + row * stride_x
    mean = 0.0
    if CENTER:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, N, BLOCK):
            acc += tl.load(xr + start + cols, mask=start + cols < N, other=0.0).to(tl.float32)
        mean = tl.sum(acc, 0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        d = tl.where(mask, tl.load(xr + start + cols, mask=mask, other=0.0).to(tl.float32) - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, 0) / N + eps)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        y = (tl.load(xr + start + cols, mask=mask, other=0.0).to(tl.float32) - mean) * rstd
        if BIAS:
            y += tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _block(n: int) -> int:
    return min(TILE, triton.next_power_of_2(max(n, 1)))


def _warps(block: int) -> int:
    return max(1, min(8, block // 256))


def _group_norm(inputs, outputs, params, affine):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    G, C = int(params["groups"]), int(params["channels"])
    gs, block = N // G, _block(N // G)
    w, b = (inputs["w"], inputs["b"]) if affine else (x, x)  # unread without affine
    return group_norm_kernel[(M, G)](x, w, b, y, N, gs, N // C, x.stride(0), y.stride(0), float(params["eps"]),
                                     AFFINE=affine, BLOCK=block, num_warps=_warps(block))


def launch_group_norm(inputs, outputs, params, dtypes):
    return _group_norm(inputs, outputs, params, True)


def launch_group_norm_noaffine(inputs, outputs, params, dtypes):
    return _group_norm(inputs, outputs, params, False)


def launch_row_amax(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    block = _block(N)
    return row_amax_kernel[(M,)](x, y, N, x.stride(0), BLOCK=block, num_warps=_warps(block))


def launch_row_mean(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    block = _block(N)
    return row_stats_kernel[(M,)](x, y, y, N, x.stride(0), 1.0, VAR=False, BLOCK=block, num_warps=_warps(block))


def launch_var_mean(inputs, outputs, params, dtypes):
    x, var, mean = inputs["x"], outputs["var"], outputs["mean"]
    M, N = x.shape
    block = _block(N)
    denom = float(N - int(params["correction"]))
    return row_stats_kernel[(M,)](x, mean, var, N, x.stride(0), denom, VAR=True, BLOCK=block,
                                  num_warps=_warps(block))


def launch_l2norm(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    block = _block(N)
    return l2norm_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), float(params["eps"]), BLOCK=block,
                               num_warps=_warps(block))


def _weightless(inputs, outputs, params, center, bias):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    block = _block(N)
    return weightless_norm_kernel[(M,)](x, inputs["b"] if bias else x, y, N, x.stride(0), y.stride(0),
                                        float(params["eps"]), CENTER=center, BIAS=bias, BLOCK=block,
                                        num_warps=_warps(block))


def launch_rmsnorm_noweight(inputs, outputs, params, dtypes):
    return _weightless(inputs, outputs, params, False, False)


def launch_layernorm_noweight(inputs, outputs, params, dtypes):
    return _weightless(inputs, outputs, params, True, False)


def launch_layernorm_bias(inputs, outputs, params, dtypes):
    return _weightless(inputs, outputs, params, True, True)
