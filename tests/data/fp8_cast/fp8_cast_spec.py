"""Per-token fp8 quantizers written as users write them, with Triton's own ``.to(tl.float8e4nv)``: the correct one
(clamp to ±448, then the cast) and one that truncates toward zero before the cast. Triton 3.9's interpreter converts
to fp8 wrongly (tests/test_interpreter_caveats.py), so on CPU the verifier replays the cast as compiled Triton does:
the correct kernel gets no finding, the truncating one still fails."""
import triton
import triton.language as tl

from verifier.spec import TritonKernel, dtypes, max_row


@triton.jit
def ptq_cast(x_ptr, y_ptr, s_ptr, N, stride_x, stride_y, floor, TRUNC: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.max(tl.where(mask, tl.abs(x), 0.0), 0)
    amax = tl.where(amax != amax, amax, tl.maximum(amax, floor))  # NaN stays NaN (torch's amax)
    scale = amax / 448.0
    q = tl.minimum(tl.maximum(x / scale, -448.0), 448.0)
    if TRUNC:  # the defect: toward zero on the float32 grid of fp8 (drops the rounding of the cast)
        e = tl.floor(tl.log2(tl.maximum(tl.abs(q), 2.0 ** -6)))
        step = tl.exp2(e - 3.0)
        q = tl.where(q >= 0, tl.floor(q / step), -tl.floor(-q / step)) * step
    tl.store(y_ptr + row * stride_y + cols, q.to(tl.float8e4nv), mask=mask)
    tl.store(s_ptr + row, scale)


def _launch(trunc):
    def launch(inputs, outputs, params, dt):
        x, y, s = inputs["x"], outputs["y"], outputs["scale"]
        M, N = x.shape
        ptq_cast[(M,)](x, y, s, N, x.stride(0), y.stride(0), float(params["floor"]), TRUNC=trunc,
                       BLOCK=triton.next_power_of_2(N))
    return launch


launch_ok, launch_trunc = _launch(False), _launch(True)

KERNELS = [
    TritonKernel(name=f"ptq-cast-{tag}", op="per_token_quant", module=__file__, launcher=f"launch_{tag}",
                 dtypes=[dtypes("bf16", "e4m3")], math_mode="triton_approx",
                 supports=max_row(4096, what="one block per row"))
    for tag in ("ok", "trunc")
]
