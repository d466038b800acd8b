"""The kernels of round_int8_spec.py: a per-token int8 quantizer rounding with libdevice round, rint or trunc."""
import triton
import triton.language as tl

tl_round = tl.extra.cuda.libdevice.round  # an alias bound at import (lmdeploy's pattern)


@triton.jit
def ptq_int8(x_ptr, y_ptr, s_ptr, N, stride_x, stride_y, MODE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), 0), 1e-10)
    v = x * (127.0 / amax)
    if MODE == 0:
        q = tl_round(v)
    elif MODE == 1:
        q = tl.extra.cuda.libdevice.rint(v)
    else:  # the defect: toward zero
        q = tl.extra.cuda.libdevice.trunc(v)
    tl.store(y_ptr + row * stride_y + cols, q.to(tl.int8), mask=mask)
    tl.store(s_ptr + row, amax / 127.0)


def _launch(mode):
    def launch(inputs, outputs, params, dt):
        x, y, s = inputs["x"], outputs["y"], outputs["scale"]
        M, N = x.shape
        ptq_int8[(M,)](x, y, s, N, x.stride(0), y.stride(0), MODE=mode, BLOCK=triton.next_power_of_2(N))
    return launch


launch_round, launch_rint, launch_trunc = _launch(0), _launch(1), _launch(2)
