"""RMSNorm, one program per row, the whole row in one block (N <= MAX_N):
y = x * rsqrt(mean(x^2) + eps) * w, fp32 math whatever the I/O dtype."""
import triton
import triton.language as tl

# The row is held in registers: up to 16384 columns (32 warps at BLOCK = 16384) no local memory on sm_90;
# past it the row spills (ptxas, Triton 3.6: up to 48 bytes at 32768, 304 to 2576 at 65536).
MAX_N = 16384


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def num_warps(block: int) -> int:
    # 16 warps hold up to 8192 columns without spilling; at 16384 they can spill (32 bytes for RMSNorm in f16
    # when N is not a multiple of 16: unvectorized loads), 32 warps (1024 threads) do not.
    return 32 if block > 8192 else max(1, min(16, block // 256))


def launch(inputs, outputs, params, dtypes):
    x, w, y = inputs["x"], inputs["w"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"rmsnorm: N={N} > {MAX_N} does not fit one block's registers")
    block = triton.next_power_of_2(N)
    return rmsnorm_kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), float(params["eps"]), BLOCK=block,
                                num_warps=num_warps(block))
