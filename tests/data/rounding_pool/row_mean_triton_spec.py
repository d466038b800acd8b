"""A Triton row mean in float32 stored as a 16-bit value per row: with the default conversion (round to nearest even
on a GPU; the Triton 3.9 interpreter truncates float32 -> bfloat16 instead) and with
``.to(tl.float16, fp_downcast_rounding="rtz")`` (toward zero, which the interpreter does as asked). Summed over the
cases, the toward-zero kernel is found; the default one is clean in float16 and in bfloat16, where the interpreter's
own truncation is left out of the sums (verifier.judge.rounding.RoundingPool)."""
import triton
import triton.language as tl

from verifier.spec import TritonKernel, dtypes


@triton.jit
def row_mean(x_ptr, y_ptr, stride, N, TOWARD_ZERO: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, 0) / N
    if TOWARD_ZERO:
        tl.store(y_ptr + row, mean.to(tl.float16, fp_downcast_rounding="rtz"))
    else:
        tl.store(y_ptr + row, mean.to(y_ptr.dtype.element_ty))


def _launch(toward_zero):
    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        row_mean[(x.shape[0],)](x, outputs["y"], x.stride(0), x.shape[1], TOWARD_ZERO=toward_zero, BLOCK=256)
    return launch


launch_toward_zero, launch_nearest = _launch(True), _launch(False)
KERNELS = [
    TritonKernel(name="triton-row-mean-toward-zero-f16", op="row_mean", module=__file__, launcher="launch_toward_zero",
                 dtypes=[dtypes("f16")]),
    TritonKernel(name="triton-row-mean", op="row_mean", module=__file__, launcher="launch_nearest",
                 dtypes=[dtypes("f16"), dtypes("bf16")]),
]
