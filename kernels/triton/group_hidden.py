"""Norms over groups of the hidden dim (group_rmsnorm, group_layernorm; verifier/ops/group_hidden.py), Triton, fp32
math, any N and any group size (tiles of at most TILE columns, re-read from memory).

One program per (row, group), on one grid axis (program p is row p // G, group p % G: no 65535 limit on G). The
group's GS = N/G contiguous columns start at g·GS; every load is masked by the group's end, not the row's, so a
group size that is not a power of two (the block padded up) never reads the next group. rmsnorm: Σx² in one pass;
layernorm: the mean, then Σ(x - mean)² (no E[x²] - E[x]² cancellation). Then y = (x - mean)·rstd·w[c] (+ b[c]) with
c the column's index in the row (a weight per column, not per group).
"""
import triton
import triton.language as tl

TILE = 4096


@triton.jit
def group_hidden_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, G, GS, stride_x, stride_y, eps,
                             CENTER: tl.constexpr, BIAS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    row = pid // G
    col0 = (pid % G) * GS  # the group's first column
    cols = tl.arange(0, BLOCK)
    xg = x_ptr + row * stride_x + col0
    mean = 0.0
    if CENTER:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, GS, BLOCK):
            acc += tl.load(xg + start + cols, mask=start + cols < GS, other=0.0).to(tl.float32)
        mean = tl.sum(acc, 0) / GS
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, GS, BLOCK):
        mask = start + cols < GS
        d = tl.where(mask, tl.load(xg + start + cols, mask=mask, other=0.0).to(tl.float32) - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, 0) / GS + eps)
    for start in range(0, GS, BLOCK):
        mask = start + cols < GS
        c = col0 + start + cols
        y = (tl.load(xg + start + cols, mask=mask, other=0.0).to(tl.float32) - mean) * rstd
        y = y * tl.load(w_ptr + c, mask=mask, other=1.0).to(tl.float32)
        if BIAS:
            y += tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + c, y.to(y_ptr.dtype.element_ty), mask=mask)


def _block(n: int) -> int:
    return min(TILE, triton.next_power_of_2(max(n, 1)))


def _warps(block: int) -> int:
    return max(1, min(8, block // 256))


def _launch(inputs, outputs, params, center):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    G = int(params["groups"])
    gs, block = N // G, _block(N // G)
    b = inputs.get("b")
    return group_hidden_norm_kernel[(M * G,)](x, inputs["w"], x if b is None else b, y, G, gs, x.stride(0),
                                              y.stride(0), float(params["eps"]), CENTER=center, BIAS=b is not None,
                                              BLOCK=block, num_warps=_warps(block))


def launch_group_rmsnorm(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, False)


def launch_group_layernorm(inputs, outputs, params, dtypes):
    return _launch(inputs, outputs, params, True)
