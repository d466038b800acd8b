"""Sampling's top-k filters (ops top_k_renorm_probs, top_k_mask_logits): BLOCK_M rows per program, each row in one
block (N <= MAX_N), fp32 math whatever the I/O dtype.

The k-th largest is found exactly, as FlashInfer's radix select finds it: each value mapped to a signed int32 key
whose order is the float order (negative floats' low 31 bits flipped; -0 added to +0 first, so float ties share a
key; a NaN the largest key, as torch.topk orders it), then a binary search over the 2^32 keys for the largest T with
at least k keys >= T (32 rounds of a count). Kept: key >= T and not NaN (every tie at the k-th largest kept:
ties='keep_all'); k >= N keeps the whole row. Renorm: the kept probabilities summed in fp32 in a fixed order and each
divided by max(sum, sum_floor); mask: the logit itself, -inf elsewhere.
"""
import triton
import triton.language as tl

MAX_N = 8192  # one block of fp32 per row


@triton.jit
def _kept(x, live, k, KEEP_ALL: tl.constexpr):
    """The kept elements of BLOCK_M rows (x fp32 [BLOCK_M, BLOCK_N], padding and dead rows masked out by ``live``)."""
    if KEEP_ALL:
        return live
    bits = (x + 0.0).to(tl.int32, bitcast=True)  # -0 + 0 = +0: float ties, one key
    key = tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
    key = tl.where(x != x, 0x7FFFFFFF, key).to(tl.int64)  # NaN: the largest, as torch.topk
    key = tl.where(live, key, -(2 ** 31) - 1)  # padding below every key
    lo = tl.full([x.shape[0]], -(2 ** 31), tl.int64)
    hi = tl.full([x.shape[0]], 2 ** 31 - 1, tl.int64)
    for _ in range(32):  # per row: at least k keys >= lo; fewer than k keys > hi
        mid = (lo + hi + 1) >> 1  # floor: an arithmetic shift (// truncates toward 0 when compiled)
        enough = tl.sum((key >= mid[:, None]).to(tl.int32), 1) >= k
        lo = tl.where(enough, mid, lo)
        hi = tl.where(enough, hi, mid - 1)
    return live & (key >= lo[:, None]) & (x == x)


@triton.jit
def top_k_renorm_probs_kernel(x_ptr, y_ptr, M, N, k, stride_x, stride_y, floor, BLOCK_M: tl.constexpr,
                              BLOCK_N: tl.constexpr, KEEP_ALL: tl.constexpr, FLOOR: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    live = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=live, other=0.0).to(tl.float32)
    kept = _kept(x, live, k, KEEP_ALL)
    s = tl.sum(tl.where(kept, x, 0.0), 1)
    if FLOOR:
        s = tl.maximum(s, floor)
    y = tl.where(kept, x / s[:, None], 0.0)
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=live)


@triton.jit
def top_k_mask_logits_kernel(x_ptr, y_ptr, M, N, k, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             KEEP_ALL: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    live = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=live, other=0.0).to(tl.float32)
    kept = _kept(x, live, k, KEEP_ALL)
    y = tl.where(kept, x, -float("inf"))
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=live)


def _shape(x, params):
    M, N = x.shape
    k = int(params["k"])
    if N > MAX_N or k < 1:
        raise ValueError(f"top-k filter: N={N}, k={k}: this kernel takes N <= {MAX_N} and k >= 1")
    block_n = triton.next_power_of_2(N)
    block_m = max(1, min(16, 2048 // block_n))  # short rows: several per program
    return M, N, k, block_m, block_n, (triton.cdiv(M, block_m),), max(1, min(8, block_m * block_n // 256))


def renorm(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["renormed"]
    M, N, k, block_m, block_n, grid, warps = _shape(x, params)
    floor = float(params["sum_floor"])
    return top_k_renorm_probs_kernel[grid](x, y, M, N, k, x.stride(0), y.stride(0), floor, BLOCK_M=block_m,
                                           BLOCK_N=block_n, KEEP_ALL=k >= N, FLOOR=floor > 0, num_warps=warps)


def mask(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["masked"]
    M, N, k, block_m, block_n, grid, warps = _shape(x, params)
    return top_k_mask_logits_kernel[grid](x, y, M, N, k, x.stride(0), y.stride(0), BLOCK_M=block_m, BLOCK_N=block_n,
                                          KEEP_ALL=k >= N, num_warps=warps)
