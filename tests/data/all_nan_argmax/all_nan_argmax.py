"""A row_amax kernel whose output on an all-+inf row depends on the index an argmax over an all-NaN slice (inf - inf)
takes: right with the slice's last index, wrong (0) with its first. Compiled Triton leaves that index to its
reduction order, so the interpreter must not pass it on one choice (tests/test_review_judge_paths.py)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _amax(x, y, N, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    a = tl.abs(tl.load(x + r * N + cols, mask=cols < N, other=float("inf")))
    m = tl.max(a, 0)
    d = a - a  # NaN where |x| is inf, 0 elsewhere: all NaN on a row of infinities
    i = tl.argmax(d, 0)
    dead = tl.max(d, 0) != tl.max(d, 0)
    tl.store(y + r, tl.where(dead & (i != BLOCK - 1), 0.0, m))


def launch(inputs, outputs, params, dtypes):
    x = inputs["x"]
    M, N = x.shape
    _amax[(M,)](x, outputs["y"], N, BLOCK=triton.next_power_of_2(N))
