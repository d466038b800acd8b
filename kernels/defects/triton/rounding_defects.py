"""A defective output conversion (Triton): launch_truncating (`defect-triton-fused-add-rmsnorm-truncates-bf16`; twin:
bundled `triton-fused-add-rmsnorm`) is the bundled fused add + RMSNorm, converting its fp32 results to bfloat16 by
clearing the low 16 bits (truncation toward zero), as a hand-written bit-cast conversion does, instead of rounding to
nearest even. Every element stays within 1 ULP, so the per-element budget passes it; about a quarter of the stored
residual is not correctly rounded, every one toward zero (check class `rounding`). The conversion is done in integer
arithmetic, so the Triton interpreter computes the same bits as a GPU."""
import triton
import triton.language as tl

MAX_N = 16384


@triton.jit
def _truncate_to_bf16(v):
    return (v.to(tl.int32, bitcast=True) & -65536).to(tl.float32, bitcast=True).to(tl.bfloat16)


@triton.jit
def truncating_kernel(x_ptr, r_ptr, w_ptr, y_ptr, N, stride_x, stride_r, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    s = x + r
    tl.store(r_ptr + row * stride_r + cols, _truncate_to_bf16(s), mask=mask)
    rstd = tl.rsqrt(tl.sum(s * s, 0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, _truncate_to_bf16(s * rstd * w), mask=mask)


def launch_truncating(inputs, outputs, params, dtypes):
    x, r, w, y = inputs["x"], inputs["residual"], inputs["w"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"fused_add_rmsnorm: N={N} > {MAX_N} does not fit one block's registers")
    block = triton.next_power_of_2(N)
    truncating_kernel[(M,)](x, r, w, y, N, x.stride(0), r.stride(0), y.stride(0), float(params["eps"]), BLOCK=block,
                            num_warps=32 if block > 8192 else max(1, min(16, block // 256)))
