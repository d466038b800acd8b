"""LayerNorm, one program per row, the whole row in one block (N <= MAX_N):
y = (x - mean) * rsqrt(var + eps) * w + b with the biased variance, fp32 math.

The variance is taken from the centred row held in registers (two passes over registers,
not E[x^2] - E[x]^2), so rows with mean >> std keep their accuracy."""
import triton
import triton.language as tl

# The row (and its centred copy) is held in registers: up to 8192 columns no local memory on sm_90; past it the
# row spills (ptxas, Triton 3.6: 24 bytes at N = 16383 in f32 even with 32 warps, 120 to 1696 at 32768).
MAX_N = 8192


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, 0) / N
    xc = tl.where(mask, x - mean, 0.0)  # padding lanes must not add mean^2 to the variance
    rstd = tl.rsqrt(tl.sum(xc * xc, 0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def num_warps(block: int) -> int:
    return max(1, min(16, block // 256))


def launch(inputs, outputs, params, dtypes):
    x, w, b, y = inputs["x"], inputs["w"], inputs["b"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"layernorm: N={N} > {MAX_N} does not fit one block's registers")
    block = triton.next_power_of_2(N)
    return layernorm_kernel[(M,)](x, w, b, y, N, x.stride(0), y.stride(0), float(params["eps"]), BLOCK=block,
                                  num_warps=num_warps(block))
