"""MoE routing (topk_softmax) defects; twins: triton-topk-softmax and triton-topk-softmax-renorm
(kernels/triton/routing.py). The same routing kernel with one switch each:

launch_renorm_over_e: 'renormalized' by the sum of all E gates instead of the k picked (for softmax gates that sum is
1, so the values stay the plain softmax: off by the picks' share of the mass).
launch_no_max_sub: softmax as exp(x) / sum(exp(x)): exp overflows past 88.7, inf / inf = NaN gates, NaN values and
arbitrary picks.
launch_tail_lost: each of 32 lanes holds E // 32 experts (the warp-per-row layout of a kernel written for E a
multiple of 32): the last E % 32 experts are never read, so for E = 60 the top k misses any of experts 32..59.

launch_high_ties is no defect: ties broken toward the larger index, as right as the smaller (the op leaves the
tie-break free); the must-pass control of the tie-aware comparison (tests/test_topk_softmax.py)."""
import triton
import triton.language as tl

MAX_E = 4096


@triton.jit
def routing_defect_kernel(x_ptr, values_ptr, indices_ptr, M, E, E_READ, stride_x, stride_v, stride_i,
                          K: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_E: tl.constexpr,
                          RENORMALIZE: tl.constexpr, OVER_E: tl.constexpr, NO_MAX: tl.constexpr,
                          HIGH_TIES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_E)
    mask = cols < E_READ
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    if NO_MAX:
        e = tl.exp(x)
    else:
        e = tl.exp(x - tl.max(x, 0))
    g = e / tl.sum(e, 0)
    key = tl.where(mask, tl.where(g != g, -0.5, g), -float("inf"))
    kcols = tl.arange(0, BLOCK_K)
    vals = tl.zeros([BLOCK_K], dtype=tl.float32)
    idxs = tl.zeros([BLOCK_K], dtype=tl.int32)
    for j in tl.static_range(K):
        best = tl.max(key, 0)
        if HIGH_TIES:
            pick = tl.max(tl.where(key == best, cols, -1), 0)
        else:
            pick = tl.min(tl.where(key == best, cols, BLOCK_E), 0)
        chosen = cols == pick
        gate = tl.sum(tl.where(chosen, g, 0.0), 0)
        vals = tl.where(kcols == j, gate, vals)
        idxs = tl.where(kcols == j, pick, idxs)
        key = tl.where(chosen, -float("inf"), key)
    if RENORMALIZE:
        if OVER_E:
            vals = vals / tl.sum(tl.where(mask, g, 0.0), 0)
        else:
            vals = vals / tl.sum(vals, 0)
    out = kcols < K
    tl.store(values_ptr + row * stride_v + kcols, vals, mask=out)
    tl.store(indices_ptr + row * stride_i + kcols, idxs.to(indices_ptr.dtype.element_ty), mask=out)


def _launch(inputs, outputs, params, over_e=False, no_max=False, tail_lost=False, high_ties=False):
    x, values, indices = inputs["x"], outputs["values"], outputs["indices"]
    M, E = x.shape
    k = int(params["k"])
    if E > MAX_E or not 1 <= k <= E:
        raise ValueError(f"topk_softmax: E={E}, k={k}: this kernel takes 1 <= k <= E <= {MAX_E}")
    e_read = max(k, E // 32 * 32) if tail_lost else E
    block_e = triton.next_power_of_2(E)
    return routing_defect_kernel[(M,)](x, values, indices, M, E, e_read, x.stride(0), values.stride(0),
                                       indices.stride(0), K=k, BLOCK_K=triton.next_power_of_2(k), BLOCK_E=block_e,
                                       RENORMALIZE=bool(params["renormalize"]), OVER_E=over_e, NO_MAX=no_max,
                                       HIGH_TIES=high_ties,
                                       num_warps=max(1, min(8, block_e // 256)))


def launch_renorm_over_e(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, over_e=True)


def launch_no_max_sub(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, no_max=True)


def launch_tail_lost(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, tail_lost=True)


def launch_high_ties(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, high_ties=True)
