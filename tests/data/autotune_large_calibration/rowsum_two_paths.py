"""A row sum with two autotuned kernels, as flash-linear-attention's layer_norm_fwd picks one by the row length: short
rows go to ``_short`` (configs differing in a constexpr), long ones to ``_long`` (configs differing in num_warps
only). Both are correct. Config 2 runs ``_long`` under the same constexprs as config 1 (its shorter list keeps its
last config), so the large case's row-ownership check (verifier.launch.row_owners, cached per launch) runs once."""
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"SPLIT": 1}), triton.Config({"SPLIT": 2})], key=["N"])
@triton.jit
def _short(x_ptr, y_ptr, N, BLOCK: tl.constexpr, SPLIT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0) * SPLIT / SPLIT)


@triton.autotune(configs=[triton.Config({}, num_warps=1), triton.Config({}, num_warps=2)], key=["N"])
@triton.jit
def _long(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


def launch(inputs, outputs, params, dt):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    if N <= 512:
        _short[(M,)](x, y, N, BLOCK=triton.next_power_of_2(N))
    else:
        _long[(M,)](x, y, N, BLOCK=1024)
