"""Row sums calling Triton builtins through module-level aliases, as Unsloth's kernels do (triton_cast = tl.cast):
one right, one that sums only the first 32 columns (tests/test_interpreter_builtin_alias.py)."""
import triton
import triton.language as tl

tcast = tl.cast
tsum = tl.sum
tload = tl.load


@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr, COLS: tl.constexpr):
    row = tcast(tl.program_id(0), tl.int64)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, COLS, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tcast(tload(x_ptr + row * stride + offs, mask=offs < N, other=0.0), tl.float32)
    tl.store(y_ptr + row, tsum(acc, axis=0).to(y_ptr.dtype.element_ty))


def launch(inputs, outputs, params, dt):
    x = inputs["x"]
    _rowsum[(x.shape[0],)](x, outputs["y"], x.shape[1], x.stride(0), BLOCK=32, COLS=x.shape[1])


def launch_first_32(inputs, outputs, params, dt):
    x = inputs["x"]
    _rowsum[(x.shape[0],)](x, outputs["y"], x.shape[1], x.stride(0), BLOCK=32, COLS=32)
