"""Row softmax with attention's score transforms, one program per row, the whole row in one block (N <= MAX_N):
z = x·scale, softcap·tanh(z / softcap), + ALiBi, + mask (mask[N] or mask[M,N]), causal (j > i + causal_offset
masked, i = row mod q_len or row), then softmax with an optional sink logit per row in the denominator.

fp32 math whatever the I/O dtype. A row with nothing live gives zeros (FlashAttention's convention; the spec
declares masked_rows='zeros'): the max is taken as 0 there, so exp(-inf - 0) = 0 and the sum 0, stored as 0.
tanh as 1 - 2 / (exp(2t) + 1): saturates to +-1 for huge |t| without inf / inf.
"""
import triton
import triton.language as tl

MAX_N = 32768


@triton.jit
def masked_softmax_kernel(x_ptr, mask_ptr, slope_ptr, sink_ptr, y_ptr, N, stride_x, stride_mask, stride_y,
                          scale, softcap, offset, q_len,
                          HAS_MASK: tl.constexpr, CAUSAL: tl.constexpr, SOFTCAP: tl.constexpr,
                          ALIBI: tl.constexpr, SINKS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inb = cols < N
    z = tl.load(x_ptr + row * stride_x + cols, mask=inb, other=0.0).to(tl.float32) * scale
    if SOFTCAP:
        t = z / softcap
        z = softcap * (1.0 - 2.0 / (tl.exp(2.0 * t) + 1.0))
    qi = tl.where(q_len > 0, row % tl.maximum(q_len, 1), row)  # a select: q_len is a runtime scalar
    if ALIBI:
        slope = tl.load(slope_ptr + row).to(tl.float32)
        z = z - slope * tl.abs((qi + offset - cols).to(tl.float32))
    if HAS_MASK:  # stride_mask 0: one mask row for every row
        z = z + tl.load(mask_ptr + row * stride_mask + cols, mask=inb, other=0.0).to(tl.float32)
    if CAUSAL:
        z = tl.where(cols > qi + offset, -float("inf"), z)
    z = tl.where(inb, z, -float("inf"))
    m = tl.max(z, 0)
    if SINKS:
        sink = tl.load(sink_ptr + row).to(tl.float32)
        m = tl.maximum(m, sink)
    m = tl.where(m == -float("inf"), 0.0, m)  # nothing live: every term exp(-inf) = 0
    e = tl.exp(z - m)
    s = tl.sum(e, 0)
    if SINKS:
        s = s + tl.exp(sink - m)
    y = tl.where(s == 0.0, 0.0, e / s)  # NaN (a NaN logit) propagates; only a row with nothing live is 0
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=inb)


def launch(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"masked softmax: N={N} > {MAX_N} does not fit one block's registers")
    mask, slopes, sinks = inputs.get("mask"), inputs.get("alibi_slopes"), inputs.get("sinks")
    block = triton.next_power_of_2(N)
    return masked_softmax_kernel[(M,)](
        x, mask if mask is not None else x, slopes if slopes is not None else x, sinks if sinks is not None else x,
        y, N, x.stride(0), mask.stride(0) if mask is not None and mask.dim() == 2 else 0, y.stride(0),
        float(params["scale"]), float(params["softcap"] or 1.0), int(params["causal_offset"]), int(params["q_len"]),
        HAS_MASK=mask is not None, CAUSAL=bool(params["causal"]), SOFTCAP=float(params["softcap"] or 0) > 0,
        ALIBI=slopes is not None, SINKS=sinks is not None, BLOCK=block, num_warps=max(1, min(16, block // 256)))
