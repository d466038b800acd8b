"""Warp-per-row online softmax written lane by lane, as the CUDA warp kernel of the seed tutorial
(000: softmax_warp_online_kernel): 32 lanes, lane j holds columns j, j + 32, ...; each lane keeps
its own (m, l) with a per-element update, then the 32 states are merged by a butterfly (lane j
with lane j + 16, then + 8, ..., + 1 — the xor shuffle pattern seen from lane 0).

Two -inf guards keep it NaN-free (the twin, `triton-warp-online-softmax`, has both):
- update guard: while a lane has seen only -inf, m_new = -inf and exp(v - m_new) = exp(-inf - -inf)
  = NaN; the guard keeps l = 0. Without it (`defect-triton-warp-softmax-no-update-guard`) a lane whose
  only element is a masked -inf (d = 32, one -inf) carries l = NaN into the merge, NaN * exp(-inf) = NaN.
- merge guard: two empty lanes (m = -inf, l = 0) meet only for d <= 15 (lanes d..15 pair with empty
  lanes d+16..31); without the guard (`defect-triton-warp-softmax-no-merge-guard`) they merge to NaN
  and the NaN reaches every lane.
"""
import triton
import triton.language as tl

MAX_N = 4096  # register-resident: ITEMS = 128 per lane at most
NEG_INF = tl.constexpr(float("-inf"))  # a constexpr: compiled Triton rejects plain globals in @jit code


@triton.jit
def _merge(ma, la, mb, lb, GUARD: tl.constexpr):
    m = tl.maximum(ma, mb, propagate_nan=tl.PropagateNan.ALL)
    l = la * tl.exp(ma - m) + lb * tl.exp(mb - m)
    if GUARD:
        l = tl.where(m == NEG_INF, 0.0, l)  # both sides empty: stay empty
    return m, l


@triton.jit
def _halve(v, W: tl.constexpr):
    # [W] -> the lower and upper halves [W // 2] (lane j and lane j + W // 2)
    return tl.split(tl.permute(tl.reshape(v, [2, W // 2]), [1, 0]))


@triton.jit
def warp_softmax_lanes_kernel(x_ptr, y_ptr, N, stride_x, stride_y, ITEMS: tl.constexpr,
                              GUARD_UPDATE: tl.constexpr, GUARD_MERGE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lane = tl.arange(0, 32)
    m = tl.full([32], NEG_INF, tl.float32)
    l = tl.full([32], 0.0, tl.float32)
    for i in range(ITEMS):
        c = lane + i * 32
        inside = c < N
        v = tl.load(x_ptr + row * stride_x + c, mask=inside, other=NEG_INF).to(tl.float32)
        m_new = tl.maximum(m, v, propagate_nan=tl.PropagateNan.ALL)
        l_new = l * tl.exp(m - m_new) + tl.exp(v - m_new)
        if GUARD_UPDATE:
            l_new = tl.where(m_new == NEG_INF, 0.0, l_new)
        m = tl.where(inside, m_new, m)  # columns past the row end leave the lane untouched
        l = tl.where(inside, l_new, l)
    ma, mb = _halve(m, 32)
    la, lb = _halve(l, 32)
    m, l = _merge(ma, la, mb, lb, GUARD_MERGE)
    ma, mb = _halve(m, 16)
    la, lb = _halve(l, 16)
    m, l = _merge(ma, la, mb, lb, GUARD_MERGE)
    ma, mb = _halve(m, 8)
    la, lb = _halve(l, 8)
    m, l = _merge(ma, la, mb, lb, GUARD_MERGE)
    ma, mb = _halve(m, 4)
    la, lb = _halve(l, 4)
    m, l = _merge(ma, la, mb, lb, GUARD_MERGE)
    ma, mb = _halve(m, 2)
    la, lb = _halve(l, 2)
    m, l = _merge(ma, la, mb, lb, GUARD_MERGE)
    m_row = tl.sum(m, 0)  # [1] -> scalar
    l_row = tl.sum(l, 0)
    for i in range(ITEMS):
        c = lane + i * 32
        inside = c < N
        v = tl.load(x_ptr + row * stride_x + c, mask=inside, other=NEG_INF).to(tl.float32)
        tl.store(y_ptr + row * stride_y + c, (tl.exp(v - m_row) / l_row).to(y_ptr.dtype.element_ty), mask=inside)


def _launch(inputs, outputs, guard_update, guard_merge):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"warp softmax: N={N} > {MAX_N} does not fit the lanes' registers")
    return warp_softmax_lanes_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), ITEMS=triton.cdiv(N, 32),
                                           GUARD_UPDATE=guard_update, GUARD_MERGE=guard_merge, num_warps=1)


def launch(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, True, True)


def launch_no_update_guard(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, False, True)


def launch_no_merge_guard(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, True, False)
