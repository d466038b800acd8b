"""A row sum whose launcher allocates a completion counter with torch.zeros and whose kernel bumps it with
tl.atomic_add (the last-block pattern of split reductions): issue #35 item 12's initcheck record, reproduced under
`verifier sanitize --tool initcheck` (benchmarks/initcheck_atomic_probe.py has the same outside the harness)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_counted(x_ptr, y_ptr, done_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_ptr + row * stride + start + offs, mask=start + offs < N, other=0.0)
        acc += x.to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))
    tl.atomic_add(done_ptr, 1)


def launch(inputs, outputs, params, dtypes):
    x, y = inputs["x"], outputs["y"]
    done = torch.zeros(1, dtype=torch.int64, device=x.device)
    _row_sum_counted[(x.shape[0],)](x, y, done, x.shape[1], x.stride(0), BLOCK=256)
