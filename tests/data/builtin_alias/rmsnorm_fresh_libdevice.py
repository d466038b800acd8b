"""An rmsnorm whose rsqrt comes from a copy of the libdevice module loaded afresh, outside sys.modules, as xformers'
``libdevice_find`` loads it (a 'Triton-version-friendly' import); its twin forgets the weight
(tests/test_interpreter_builtin_alias.py)."""
import importlib.util

import triton
import triton.language as tl


def _fresh_libdevice(name):
    spec = importlib.util.find_spec("triton.language.extra.libdevice")
    module = importlib.util.module_from_spec(spec)  # a new module object: not the one in sys.modules
    spec.loader.exec_module(module)
    return getattr(module, name)


rsqrt = _fresh_libdevice("rsqrt")


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, N, eps, sx, sy, WEIGHT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + row * sx + offs, mask=m, other=0.0).to(tl.float32)
    y = x * rsqrt(tl.sum(x * x, 0) / N + eps)
    if WEIGHT:
        y = y * tl.load(w_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + row * sy + offs, y.to(y_ptr.dtype.element_ty), mask=m)


def _launch(weight):
    def launch(inputs, outputs, params, dt):
        x, y = inputs["x"], outputs["y"]
        _rmsnorm[(x.shape[0],)](x, inputs["w"], y, x.shape[1], params["eps"], x.stride(0), y.stride(0),
                                WEIGHT=weight, BLOCK=triton.next_power_of_2(x.shape[1]))
    return launch


launch, launch_no_weight = _launch(True), _launch(False)
