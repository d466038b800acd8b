"""A row sum autotuned over its block size, with no loop over the row: the config of BLOCK=32 sums only the first 32
columns of longer rows. On a GPU where the autotuner picks BLOCK=4096 every check passes; the bug is the other
config's (tests/test_autotune_configs.py)."""
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 4096}, num_warps=4), triton.Config({"BLOCK": 32}, num_warps=1)],
                 key=["N"])
@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


@triton.autotune(configs=[triton.Config({"BLOCK": 4096}, num_warps=4), triton.Config({"BLOCK": 2048}, num_warps=2)],
                 key=["N"])
@triton.jit
def _rowsum_ok(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))


def launch_bug(inputs, outputs, params, dt):
    x = inputs["x"]
    _rowsum[(x.shape[0],)](x, outputs["y"], x.shape[1], x.stride(0))


def launch_ok(inputs, outputs, params, dt):
    x = inputs["x"]
    _rowsum_ok[(x.shape[0],)](x, outputs["y"], x.shape[1], x.stride(0))
