"""Configs that differ only in num_warps compute the same values in the Triton interpreter (it ignores compile
options): the second BLOCK=4096 config is not run again there; BLOCK=32 (no loop over the row) still is, and fails."""
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 4096}, num_warps=4), triton.Config({"BLOCK": 4096}, num_warps=8),
                          triton.Config({"BLOCK": 32}, num_warps=1)], key=["N"])
@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


def launch(inputs, outputs, params, dt):
    x = inputs["x"]
    _rowsum[(x.shape[0],)](x, outputs["y"], x.shape[1], x.stride(0))
