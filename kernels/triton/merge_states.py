"""Attention-state merge (op merge_attn_states): BLOCK_M rows per program, each row's N values in one block.

fp32 math whatever the I/O dtype: m = max(lse_a, lse_b), w = B^(lse - m) (exp2 of (lse - m)·log2 e for base e,
exp2 directly for base 2), v = x·w_a/s + v_b·w_b/s, lse = m + log_B(s). A -inf side gets w = 0 and the other passes
through; EMPTY_ZERO guards both -inf (v = 0, lse = -inf), else that row is NaN as the plain arithmetic gives.
"""
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)  # a @triton.jit function reads globals as constexprs only (compiled)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def merge_states_kernel(va_ptr, la_ptr, vb_ptr, lb_ptr, v_ptr, lse_ptr, M, N, s_va, s_vb, s_v,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BASE2: tl.constexpr,
                        EMPTY_ZERO: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    live = rows < M
    la = tl.load(la_ptr + rows, mask=live, other=0.0)
    lb = tl.load(lb_ptr + rows, mask=live, other=0.0)
    m = tl.maximum(la, lb, propagate_nan=tl.PropagateNan.ALL)  # a NaN lse propagates (torch.maximum)
    if BASE2:
        wa = tl.exp2(la - m)
        wb = tl.exp2(lb - m)
    else:
        wa = tl.exp2((la - m) * LOG2E)
        wb = tl.exp2((lb - m) * LOG2E)
    s = wa + wb
    pa = wa / s
    pb = wb / s
    if BASE2:
        lse = m + tl.log2(s)
    else:
        lse = m + tl.log2(s) * LN2
    mask = live[:, None] & (cols[None, :] < N)
    va = tl.load(va_ptr + rows[:, None] * s_va + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    vb = tl.load(vb_ptr + rows[:, None] * s_vb + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    v = va * pa[:, None] + vb * pb[:, None]
    if EMPTY_ZERO:
        empty = m == -float("inf")
        v = tl.where(empty[:, None], 0.0, v)
        lse = tl.where(empty, m, lse)
    tl.store(v_ptr + rows[:, None] * s_v + cols[None, :], v.to(v_ptr.dtype.element_ty), mask=mask)
    tl.store(lse_ptr + rows, lse, mask=live)


MAX_N = 8192


def launch(inputs, outputs, params, dtypes):
    x, vb, v = inputs["x"], inputs["v_b"], outputs["v"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"merge_attn_states: N={N} > {MAX_N} (one block per row)")
    block_n = triton.next_power_of_2(N)
    block_m = max(1, min(16, 2048 // block_n))
    return merge_states_kernel[(triton.cdiv(M, block_m),)](
        x, inputs["lse_a"], vb, inputs["lse_b"], v, outputs["lse"], M, N, x.stride(0), vb.stride(0), v.stride(0),
        BLOCK_M=block_m, BLOCK_N=block_n, BASE2=params["lse_base"] == "2", EMPTY_ZERO=params["empty"] == "zero",
        num_warps=max(1, min(8, block_m * block_n // 512)))
