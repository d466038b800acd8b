"""Row softmax that also writes the row's log-sum-exp (lse[M] float32), as attention-style softmax kernels keep it
for a backward or a merge: one program per row, the whole row in one block (N <= MAX_N). z = x·scale, + mask (mask[N]
or mask[M,N]), causal (j > row masked), an optional sink logit per row in the denominator (and so in lse). fp32 math.

A row with nothing live (every column masked, no sink) gives y = 0 and lse = +inf, FlashAttention's convention
(`sum == 0 || sum != sum ? INFINITY`: a NaN or +inf logit gives +inf too): the spec declares masked_rows='zeros',
lse_nonfinite='posinf'. BASE2: lse stored as log2-sum-exp2 (lse / ln 2), FlashInfer's convention (lse_base='2').
"""
import triton
import triton.language as tl

MAX_N = 32768
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def softmax_lse_kernel(x_ptr, mask_ptr, sink_ptr, y_ptr, lse_ptr, N, stride_x, stride_mask, stride_y, scale,
                       HAS_MASK: tl.constexpr, CAUSAL: tl.constexpr, SINKS: tl.constexpr, BASE2: tl.constexpr,
                       BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inb = cols < N
    z = tl.load(x_ptr + row * stride_x + cols, mask=inb, other=0.0).to(tl.float32) * scale
    if HAS_MASK:  # stride_mask 0: one mask row for every row
        z = z + tl.load(mask_ptr + row * stride_mask + cols, mask=inb, other=0.0).to(tl.float32)
    if CAUSAL:
        z = tl.where(cols > row, -float("inf"), z)
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
    y = tl.where(s == 0.0, 0.0, e / s)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=inb)
    lse = m + tl.log(s)
    if BASE2:
        lse = lse * LOG2E
    tl.store(lse_ptr + row, tl.where((s == 0.0) | (s != s), float("inf"), lse))  # no finite lse: +inf


def launch(inputs, outputs, params, dtypes):
    x, y, lse = inputs["x"], outputs["y"], outputs["lse"]
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"softmax with lse: N={N} > {MAX_N} does not fit one block's registers")
    mask, sinks = inputs.get("mask"), inputs.get("sinks")
    block = triton.next_power_of_2(N)
    return softmax_lse_kernel[(M,)](
        x, mask if mask is not None else x, sinks if sinks is not None else x, y, lse, N, x.stride(0),
        mask.stride(0) if mask is not None and mask.dim() == 2 else 0, y.stride(0), float(params["scale"]),
        HAS_MASK=mask is not None, CAUSAL=bool(params["causal"]), SINKS=sinks is not None,
        BASE2=params["lse_base"] in ("2", 2), BLOCK=block, num_warps=max(1, min(16, block // 256)))
