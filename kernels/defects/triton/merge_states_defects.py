"""Attention-state merge (merge_attn_states) defects; twins: triton-merge-attn-states and
triton-merge-attn-states-base2-zero (kernels/triton/merge_states.py). One merge kernel with one switch each:

launch_mixed_base: FlashInfer's base-2 states (log2-sum-exp2) weighted with exp, as a base-e kernel would: the
weights are e^(lse - m) instead of 2^(lse - m), wrong wherever the two lse differ.
launch_no_max_sub: w = B^lse without the max subtracted: B^lse overflows float32 past lse = 88.7 (base e), inf / inf
= NaN.
launch_unguarded_empty: declares the guarded contract (both states empty gives v = 0, lse = -inf) but merges
-inf - -inf = NaN weights: NaN rows where zeros were promised."""
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def merge_defect_kernel(va_ptr, la_ptr, vb_ptr, lb_ptr, v_ptr, lse_ptr, M, N, s_va, s_vb, s_v,
                        BLOCK_N: tl.constexpr, BASE2: tl.constexpr, MIXED: tl.constexpr, NO_MAX: tl.constexpr,
                        GUARD: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    la = tl.load(la_ptr + row)
    lb = tl.load(lb_ptr + row)
    m = tl.maximum(la, lb)
    if NO_MAX:
        m = 0.0
    if BASE2 and not MIXED:
        wa = tl.exp2(la - m)
        wb = tl.exp2(lb - m)
    else:
        wa = tl.exp2((la - m) * LOG2E)
        wb = tl.exp2((lb - m) * LOG2E)
    s = wa + wb
    if BASE2 and not MIXED:
        lse = m + tl.log2(s)
    else:
        lse = m + tl.log2(s) * LN2
    mask = cols < N
    va = tl.load(va_ptr + row * s_va + cols, mask=mask, other=0.0).to(tl.float32)
    vb = tl.load(vb_ptr + row * s_vb + cols, mask=mask, other=0.0).to(tl.float32)
    v = va * (wa / s) + vb * (wb / s)
    if GUARD:
        empty = tl.maximum(la, lb) == -float("inf")
        v = tl.where(empty, 0.0, v)
        lse = tl.where(empty, -float("inf"), lse)
    tl.store(v_ptr + row * s_v + cols, v.to(v_ptr.dtype.element_ty), mask=mask)
    tl.store(lse_ptr + row, lse)


def _launch(inputs, outputs, params, mixed=False, no_max=False, guard=None):
    x, vb, v = inputs["x"], inputs["v_b"], outputs["v"]
    M, N = x.shape
    if N > 8192:
        raise ValueError(f"merge_attn_states: N={N} > 8192")
    guard = params["empty"] == "zero" if guard is None else guard
    return merge_defect_kernel[(M,)](x, inputs["lse_a"], vb, inputs["lse_b"], v, outputs["lse"], M, N, x.stride(0),
                                     vb.stride(0), v.stride(0), BLOCK_N=triton.next_power_of_2(N),
                                     BASE2=params["lse_base"] == "2", MIXED=mixed, NO_MAX=no_max, GUARD=guard)


def launch_mixed_base(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, mixed=True)


def launch_no_max_sub(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, no_max=True)


def launch_unguarded_empty(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, guard=False)
