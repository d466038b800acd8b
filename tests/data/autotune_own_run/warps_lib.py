"""A library module's autotuned row sum, launched through its own wrapper (the spec's launcher names no autotuner):
config 3 differs from config 1 only in num_warps, so the interpreter runs it once; BLOCK=32 (no loop) fails."""
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 4096}, num_warps=4), triton.Config({"BLOCK": 32}, num_warps=1),
                          triton.Config({"BLOCK": 4096}, num_warps=8)], key=["N"])
@triton.jit
def _rowsum_lib(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


def rowsum(x, y):
    _rowsum_lib[(x.shape[0],)](x, y, x.shape[1], x.stride(0))
