"""A 'library' row sum that selects the tensor's CUDA device around its launch, as FBGEMM's quantizers do
(``with torch.cuda.device(a.device.index):``), and a launcher calling it (tests/test_cuda_device_ctx.py)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, 0).to(y_ptr.dtype.element_ty))


def library_row_sum(x, how):
    M, N = x.shape
    y = torch.empty((M,), dtype=x.dtype, device=x.device)
    with torch.cuda.device(x.device.index if how == "index" else x.device):
        _row_sum[(M,)](x, y, N, x.stride(0), BLOCK=triton.next_power_of_2(N))
    return y


def by_index(inputs, outputs, params, dt):
    outputs["y"].copy_(library_row_sum(inputs["x"], "index"))


def by_device(inputs, outputs, params, dt):
    outputs["y"].copy_(library_row_sum(inputs["x"], "device"))
