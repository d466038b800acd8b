"""Defect twins of kernels/triton/softmax_lse.py (softmax writing y and the row's lse), each a slip in the lse alone
(y stays right, so a test comparing y passes):

- the sink left out of the lse: y divides by the sum with the sink term, lse = m + log(sum without it);
- lse = log(sum exp(z - m)): the max never added back (right only where the row max is 0);
- a fully masked row's lse written -inf (the guarded max 0 plus log 0: FlashAttention's split-KV convention) where
  the kernel declares +inf (lse_nonfinite='posinf', its non-split convention).
"""
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _kernel(x_ptr, mask_ptr, sink_ptr, y_ptr, lse_ptr, N, stride_x, stride_mask, stride_y, scale,
            HAS_MASK: tl.constexpr, CAUSAL: tl.constexpr, SINKS: tl.constexpr, BASE2: tl.constexpr,
            NO_SINK: tl.constexpr, NO_MAX: tl.constexpr, DEAD_NEGINF: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inb = cols < N
    z = tl.load(x_ptr + row * stride_x + cols, mask=inb, other=0.0).to(tl.float32) * scale
    if HAS_MASK:
        z = z + tl.load(mask_ptr + row * stride_mask + cols, mask=inb, other=0.0).to(tl.float32)
    if CAUSAL:
        z = tl.where(cols > row, -float("inf"), z)
    z = tl.where(inb, z, -float("inf"))
    m = tl.max(z, 0)
    if SINKS:
        sink = tl.load(sink_ptr + row).to(tl.float32)
        m = tl.maximum(m, sink)
    m = tl.where(m == -float("inf"), 0.0, m)
    e = tl.exp(z - m)
    s_rows = tl.sum(e, 0)
    s = s_rows
    if SINKS:
        s = s + tl.exp(sink - m)
    y = tl.where(s == 0.0, 0.0, e / s)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=inb)
    s_lse = s_rows if NO_SINK else s  # bug when NO_SINK: the sink's term is in y's denominator, not in lse
    lse = tl.log(s_lse) if NO_MAX else m + tl.log(s_lse)  # bug when NO_MAX: the max never added back
    if BASE2:
        lse = lse * LOG2E
    if not DEAD_NEGINF:  # bug when DEAD_NEGINF: an empty row keeps 0 + log(0) = -inf
        lse = tl.where((s == 0.0) | (s != s), float("inf"), lse)
    tl.store(lse_ptr + row, lse)


def _launch(inputs, outputs, params, **bug):
    x, y, lse = inputs["x"], outputs["y"], outputs["lse"]
    M, N = x.shape
    mask, sinks = inputs.get("mask"), inputs.get("sinks")
    block = triton.next_power_of_2(N)
    flags = {"NO_SINK": False, "NO_MAX": False, "DEAD_NEGINF": False, **bug}
    return _kernel[(M,)](
        x, mask if mask is not None else x, sinks if sinks is not None else x, y, lse, N, x.stride(0),
        mask.stride(0) if mask is not None and mask.dim() == 2 else 0, y.stride(0), float(params["scale"]),
        HAS_MASK=mask is not None, CAUSAL=bool(params["causal"]), SINKS=sinks is not None,
        BASE2=params["lse_base"] in ("2", 2), BLOCK=block, num_warps=max(1, min(16, block // 256)), **flags)


def launch_no_sink(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, NO_SINK=True)


def launch_no_max(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, NO_MAX=True)


def launch_dead_neginf(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, DEAD_NEGINF=True)
