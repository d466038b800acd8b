"""MoE routing (op topk_softmax): BLOCK_M rows per program, each row's E gating logits in one block (E <= MAX_E).

fp32 math whatever the logits' dtype. Gates: softmax over all E (the row max subtracted first) or sigmoid; then k
rounds of an argmax (the largest gate, the smallest index among equal ones, as vLLM's kernel breaks ties), each
pick removed before the next; the k values are kept in registers and, renormalized, divided by their sum before
one store. A NaN gate is picked after every number (any distinct picks are right in such a row).
"""
import triton
import triton.language as tl

MAX_E = 4096  # one block of fp32 per row; routers have 8-512 experts


@triton.jit
def topk_softmax_kernel(x_ptr, values_ptr, indices_ptr, M, E, stride_x, stride_v, stride_i,
                        K: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr,
                        SIGMOID: tl.constexpr, RENORMALIZE: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    cols = tl.arange(0, BLOCK_E)
    live_row = rows < M
    mask = live_row[:, None] & (cols[None, :] < E)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
    if SIGMOID:
        g = 1.0 / (1.0 + tl.exp(-x))
    else:
        m = tl.max(x, 1)
        e = tl.exp(x - m[:, None])
        g = e / tl.sum(e, 1)[:, None]
    # The key a pick ranks: the gate, NaN below every number (still picked before padding and taken picks).
    key = tl.where(g != g, -0.5, g)
    key = tl.where(mask, key, -float("inf"))
    kcols = tl.arange(0, BLOCK_K)
    vals = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    idxs = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.int32)
    for j in tl.static_range(K):
        best = tl.max(key, 1)
        hit = key == best[:, None]
        pick = tl.min(tl.where(hit, cols[None, :], BLOCK_E), 1)
        chosen = cols[None, :] == pick[:, None]
        gate = tl.sum(tl.where(chosen, g, 0.0), 1)
        gate = tl.where(tl.sum(tl.where(chosen & (g != g), 1, 0), 1) > 0, float("nan"), gate)
        vals = tl.where(kcols[None, :] == j, gate[:, None], vals)
        idxs = tl.where(kcols[None, :] == j, pick[:, None], idxs)
        key = tl.where(chosen, -float("inf"), key)
    if RENORMALIZE:
        vals = vals / tl.sum(vals, 1)[:, None]
    out = live_row[:, None] & (kcols[None, :] < K)
    tl.store(values_ptr + rows[:, None] * stride_v + kcols[None, :], vals, mask=out)
    tl.store(indices_ptr + rows[:, None] * stride_i + kcols[None, :], idxs.to(indices_ptr.dtype.element_ty), mask=out)


def launch(inputs, outputs, params, dtypes):
    x, values, indices = inputs["x"], outputs["values"], outputs["indices"]
    M, E = x.shape
    k = int(params["k"])
    if E > MAX_E or not 1 <= k <= E:
        raise ValueError(f"topk_softmax: E={E}, k={k}: this kernel takes 1 <= k <= E <= {MAX_E}")
    block_e = triton.next_power_of_2(E)
    block_m = max(1, min(16, 2048 // block_e))  # small E: several rows per program, one warp's worth of work each
    grid = (triton.cdiv(M, block_m),)
    return topk_softmax_kernel[grid](x, values, indices, M, E, x.stride(0), values.stride(0), indices.stride(0),
                                     K=k, BLOCK_K=triton.next_power_of_2(k), BLOCK_M=block_m, BLOCK_E=block_e,
                                     SIGMOID=params["gate"] == "sigmoid", RENORMALIZE=bool(params["renormalize"]),
                                     num_warps=max(1, min(8, block_m * block_e // 256)))

