"""A row's logsumexp over blocks of 65,536 columns (Triton's one-block element limit), one program per (row, block),
the blocks' lse merged with torch.logsumexp after, as flash-linear-attention's logsumexp_fwd and flash-attn's
cross entropy split long rows. ``unguarded``: a block of only -inf gives exp(-inf - -inf) = NaN, and the row's lse is
NaN though it has finite logits. ``guarded``: such a block's lse is -inf."""
import torch
import triton
import triton.language as tl

BLOCK = 65536


@triton.jit
def _block_lse(x_ptr, z_ptr, N, NB, BLOCK: tl.constexpr, GUARD: tl.constexpr):
    row, blk = tl.program_id(0).to(tl.int64), tl.program_id(1)
    cols = blk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    m = tl.max(x, 0)
    if GUARD:
        m = tl.where(m == -float("inf"), 0.0, m)
    tl.store(z_ptr + row * NB + blk, tl.log(tl.sum(tl.exp(x - m), 0)) + m)


def _launch(inputs, outputs, guard):
    x = inputs["x"]
    M, N = x.shape
    nb = triton.cdiv(N, BLOCK)
    z = torch.empty(M, nb, dtype=torch.float32, device=x.device)
    _block_lse[(M, nb)](x, z, N, nb, BLOCK=BLOCK, GUARD=guard)
    outputs["lse"].copy_(torch.logsumexp(z, dim=-1))


def unguarded(inputs, outputs, params, dt):
    _launch(inputs, outputs, False)


def guarded(inputs, outputs, params, dt):
    _launch(inputs, outputs, True)
