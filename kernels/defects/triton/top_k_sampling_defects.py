"""Sampling's top-k filter defects (ops top_k_renorm_probs, top_k_mask_logits); twins: triton-top-k-renorm-probs,
triton-top-k-renorm-probs-floor and triton-top-k-mask-logits (kernels/triton/top_k_sampling.py). The same filter
with one switch each:

launch_mask_sort_cut: exactly k kept, the ties at the k-th largest cut by index (a sort-then-cut-at-k kernel) while
it declares the default ties='keep_all' (every tie kept, as FlashInfer and ``x >= topk(x, k).values[:, -1:]`` do):
a sampler's candidate set shrinks on tied logits. Randn rows never tie.
launch_renorm_no_floor: declares sum_floor=1e-8 (FlashInfer's max(sum, 1e-8)) but divides by the raw kept sum: a
row whose kept probabilities are all 0 (underflowed) gives 0 / 0 = NaN where 0 was promised.
launch_mask_nan_smallest: a NaN ranked below every number (the routing kernels' choice) instead of above, as
torch.topk ranks it: in a row holding NaNs the k-th largest moves down, one number per NaN kept too many.
launch_mask_k_plus_1: the pivot searched for rank k + 1 (an off-by-one in a 0-based k-th element): k + 1 kept.
"""
import triton
import triton.language as tl

MAX_N = 8192


@triton.jit
def top_k_defect_kernel(x_ptr, y_ptr, N, k, stride_x, stride_y, floor, BLOCK_N: tl.constexpr, RENORM: tl.constexpr,
                        KEEP_ALL: tl.constexpr, FLOOR: tl.constexpr, SORT_CUT: tl.constexpr,
                        NAN_SMALL: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    live = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=live, other=0.0).to(tl.float32)
    if KEEP_ALL:
        kept = live
    else:
        bits = (x + 0.0).to(tl.int32, bitcast=True)
        key = tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
        if NAN_SMALL:
            key = tl.where(x != x, -(2 ** 31), key).to(tl.int64)
        else:
            key = tl.where(x != x, 0x7FFFFFFF, key).to(tl.int64)
        key = tl.where(live, key, -(2 ** 31) - 1)
        lo = tl.full([], -(2 ** 31), tl.int64)
        hi = tl.full([], 2 ** 31 - 1, tl.int64)
        for _ in range(32):
            mid = (lo + hi + 1) >> 1
            enough = tl.sum((key >= mid).to(tl.int32), 0) >= k
            lo = tl.where(enough, mid, lo)
            hi = tl.where(enough, hi, mid - 1)
        kept = live & (key >= lo) & (x == x)
        if SORT_CUT:
            ranked = live & (key > lo)  # above the k-th largest, NaN included (each takes a slot)
            above = ranked & (x == x)
            tied = (kept & ~above).to(tl.int32)
            kept = above | ((tied > 0) & (tl.cumsum(tied, 0) <= k - tl.sum(ranked.to(tl.int32), 0)))
    if RENORM:
        s = tl.sum(tl.where(kept, x, 0.0), 0)
        if FLOOR:
            s = tl.maximum(s, floor)
        y = tl.where(kept, x / s, 0.0)
    else:
        y = tl.where(kept, x, -float("inf"))
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=live)


def _launch(inputs, outputs, params, renorm, k_shift=0, floor=True, sort_cut=False, nan_small=False):
    x = inputs["x"]
    y = outputs["renormed" if renorm else "masked"]
    M, N = x.shape
    k = int(params["k"]) + k_shift
    if N > MAX_N:
        raise ValueError(f"top-k filter: N={N} > {MAX_N}")
    fl = float(params.get("sum_floor", 0.0))
    return top_k_defect_kernel[(M,)](x, y, N, k, x.stride(0), y.stride(0), fl, BLOCK_N=triton.next_power_of_2(N),
                                     RENORM=renorm, KEEP_ALL=k >= N, FLOOR=floor and fl > 0, SORT_CUT=sort_cut,
                                     NAN_SMALL=nan_small)


def launch_mask_sort_cut(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, renorm=False, sort_cut=True)


def launch_renorm_no_floor(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, renorm=True, floor=False)


def launch_mask_nan_smallest(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, renorm=False, nan_small=True)


def launch_mask_k_plus_1(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, renorm=False, k_shift=1)


def launch_mask_sort_cut_declared(inputs, outputs, params, dtypes):
    """No defect: the sort-then-cut kernel declaring ties='exactly_k' (the tie-aware comparison's must-pass control)."""
    return _launch(inputs, outputs, params, renorm=False, sort_cut=True)
