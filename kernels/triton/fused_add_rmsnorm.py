"""Fused residual add + RMSNorm, one program per row (N <= MAX_N):
s = x + residual in fp32; residual <- s (rounded to its dtype, in place);
y = s * rsqrt(mean(s^2) + eps) * w computed from the fp32 sum, not from the rounded residual."""
import triton
import triton.language as tl

# The row is held in registers: up to 16384 columns (32 warps at BLOCK = 16384) no local memory on sm_90;
# past it the row spills (ptxas, Triton 3.6: up to 488 bytes at 32768, 568 to 3680 at 65536).
MAX_N = 16384


@triton.jit
def fused_add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, N, stride_x, stride_r, stride_y, eps,
                             BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    s = x + r
    tl.store(r_ptr + row * stride_r + cols, s.to(r_ptr.dtype.element_ty), mask=mask)
    rstd = tl.rsqrt(tl.sum(s * s, 0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (s * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def num_warps(block: int) -> int:
    # 16 warps hold up to 8192 columns without spilling; at 16384 they can spill (32 bytes for RMSNorm in f16
    # when N is not a multiple of 16: unvectorized loads), 32 warps (1024 threads) do not.
    return 32 if block > 8192 else max(1, min(16, block // 256))


def launch(inputs, outputs, params, dtypes):
    x, r, w, y = inputs["x"], inputs["residual"], inputs["w"], outputs["y"]
    if outputs["residual"] is not r:
        raise ValueError("fused_add_rmsnorm: outputs['residual'] must be the inputs['residual'] tensor (in place)")
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"fused_add_rmsnorm: N={N} > {MAX_N} does not fit one block's registers")
    block = triton.next_power_of_2(N)
    return fused_add_rmsnorm_kernel[(M,)](x, r, w, y, N, x.stride(0), r.stride(0), y.stride(0), float(params["eps"]),
                                          BLOCK=block, num_warps=num_warps(block))
