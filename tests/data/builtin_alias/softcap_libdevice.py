"""A softcapped softmax calling tanh through a libdevice alias, as Unsloth's kernels do (triton_tanh =
libdevice.tanh); its twin skips the cap (tests/test_interpreter_builtin_alias.py)."""
import triton
import triton.language as tl
from triton.language.extra import libdevice

triton_tanh = libdevice.tanh


@triton.jit
def _softmax(x_ptr, y_ptr, N, sx, sy, CAP: tl.constexpr, DO_CAP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + row * sx + offs, mask=m, other=-float("inf")).to(tl.float32)
    if DO_CAP:
        x = tl.where(m, CAP * triton_tanh(x / CAP), -float("inf"))  # padding stays -inf (tanh(-inf) = -1)
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + row * sy + offs, (e / tl.sum(e, 0)).to(y_ptr.dtype.element_ty), mask=m)


def _launch(do_cap):
    def launch(inputs, outputs, params, dt):
        x, y = inputs["x"], outputs["y"]
        _softmax[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0), CAP=float(params["softcap"]),
                                DO_CAP=do_cap, BLOCK=triton.next_power_of_2(x.shape[1]))
    return launch


launch, launch_uncapped = _launch(True), _launch(False)
