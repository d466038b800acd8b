"""Defective normalization kernels (Triton), one program per row, and their twins.

- launch_layernorm_naive_var (`defect-triton-layernorm-naive-variance`; twin: bundled
  `triton-layernorm`): var = E[x²] - E[x]² in fp32. For mean >> std rows (1000 ± 1) the two terms
  agree in all but their last bits, so the variance is mostly rounding error (or negative).
- launch_rmsnorm_tiled (twin `triton-rmsnorm-tiled`) / launch_rmsnorm_io_acc
  (`defect-triton-rmsnorm-io-dtype-acc`): any N, 256-column tiles; each lane accumulates x² over
  the tiles. The defect rounds that per-lane accumulator to the I/O dtype (f16/bf16) after every
  add, as a native f16/bf16 accumulator would (done in fp32 + round so that the interpreter,
  whose bf16 arithmetic is not faithful, computes the same thing): on a vocabulary row each lane
  adds ~600 squares and once its sum passes 512, f16 rounds away every addend below 0.25 and bf16
  every addend below 2 (stagnation), so sum(x²) and every output are off.
- launch_rmsnorm_capped (`defect-triton-rmsnorm-capped-block`; twin: bundled `triton-rmsnorm`,
  which refuses N > 65536): caps the block at 16384 columns "to stay in registers" but neither
  loops nor refuses: columns past 16384 are never read nor written.
"""
import triton
import triton.language as tl

CAP = 16384
TILE = 256


@triton.jit
def layernorm_naive_var_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, 0) / N
    var = tl.sum(x * x, 0) / N - mean * mean  # one pass, catastrophic cancellation
    rstd = tl.rsqrt(tl.maximum(var, 0.0) + eps)
    tl.store(y_ptr + row * stride_y + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_tiled_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr,
                         IO_ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < N, other=0.0)
        xf = x.to(tl.float32)
        acc += xf * xf
        if IO_ACC:
            acc = acc.to(x_ptr.dtype.element_ty).to(tl.float32)  # per-lane partial sums held in f16/bf16
    rstd = tl.rsqrt(tl.sum(acc, 0) / N + eps)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + start + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_capped_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N  # BLOCK < N for long rows: the rest of the row is silently dropped
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _warps(block):
    return max(1, min(16, block // 256))


def launch_layernorm_naive_var(inputs, outputs, params, dtypes):
    x, w, b, y = inputs["x"], inputs["w"], inputs["b"], outputs["y"]
    M, N = x.shape
    block = triton.next_power_of_2(N)
    return layernorm_naive_var_kernel[(M,)](x, w, b, y, N, x.stride(0), y.stride(0), float(params["eps"]),
                                            BLOCK=block, num_warps=_warps(block))


def _rmsnorm_tiled(inputs, outputs, params, io_acc):
    x, w, y = inputs["x"], inputs["w"], outputs["y"]
    M, N = x.shape
    block = min(TILE, triton.next_power_of_2(N))
    return rmsnorm_tiled_kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), float(params["eps"]), BLOCK=block,
                                      IO_ACC=io_acc, num_warps=_warps(block))


def launch_rmsnorm_tiled(inputs, outputs, params, dtypes):
    return _rmsnorm_tiled(inputs, outputs, params, False)


def launch_rmsnorm_io_acc(inputs, outputs, params, dtypes):
    return _rmsnorm_tiled(inputs, outputs, params, True)


def launch_rmsnorm_capped(inputs, outputs, params, dtypes):
    x, w, y = inputs["x"], inputs["w"], outputs["y"]
    M, N = x.shape
    block = min(CAP, triton.next_power_of_2(N))
    return rmsnorm_capped_kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), float(params["eps"]), BLOCK=block,
                                       num_warps=_warps(block))
