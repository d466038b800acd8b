"""Defective group-over-hidden-dim norms, Triton; their twins are the bundled kernels of
kernels/triton/group_hidden.py. Each reproduces a pitfall of production code:

- launch_group_layernorm_naive_var: the group variance as E[x²] - E[x]² in fp32, one pass over the group (the
  single-sweep form of Welford-less Triton group norms, as Liger-Kernel's GroupNorm): on a group of 500 + N(0, 1)
  the variance loses its low digits to cancellation, y is off by ~1%. (A group of 1000 + a few ULPs is not
  enough: its variance is far below eps = 1e-5, so the cancelled variance, 0, gives nearly the same rstd);
- launch_group_rmsnorm_row_mask: the group's block (GS padded to a power of two) masked by the row's end instead of
  the group's: where GS is not a power of two, the padding lanes read the next group's columns into the sum of
  squares (the last group alone is right).
"""
import triton
import triton.language as tl


@triton.jit
def group_hidden_defect_kernel(x_ptr, w_ptr, y_ptr, N, G, GS, stride_x, stride_y, eps, CENTER: tl.constexpr,
                               ROW_MASK: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    row = pid // G
    col0 = (pid % G) * GS
    cols = tl.arange(0, BLOCK)  # one block holds the group: BLOCK >= GS
    xg = x_ptr + row * stride_x + col0
    in_group = cols < GS
    read = col0 + cols < N if ROW_MASK else in_group
    x = tl.load(xg + cols, mask=read, other=0.0).to(tl.float32)
    s = tl.sum(x, 0)
    sq = tl.sum(x * x, 0)
    if CENTER:
        mean = s / GS
        var = sq / GS - mean * mean  # one pass: cancels on groups of mean >> std
    else:
        mean = 0.0
        var = sq / GS
    rstd = 1.0 / tl.sqrt(tl.maximum(var, 0.0) + eps)
    y = (x - mean) * rstd * tl.load(w_ptr + col0 + cols, mask=in_group, other=1.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + col0 + cols, y.to(y_ptr.dtype.element_ty), mask=in_group)


def _launch(inputs, outputs, params, center, row_mask):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    G = int(params["groups"])
    block = triton.next_power_of_2(max(N // G, 1))
    return group_hidden_defect_kernel[(M * G,)](x, inputs["w"], y, N, G, N // G, x.stride(0), y.stride(0),
                                                float(params["eps"]), CENTER=center, ROW_MASK=row_mask, BLOCK=block,
                                                num_warps=max(1, min(8, block // 256)))


def launch_group_layernorm_naive_var(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, True, False)


def launch_group_rmsnorm_row_mask(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, False, True)
