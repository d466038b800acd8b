"""Quantizer defects (kernels/defects/triton/defects.py lists them; twins in kernels/triton/quant.py), each a
reproduction of a reported pitfall: int8 by a truncating cast, a scale from part of the row's amax, an e5m2 output
clamped at e4m3's 448, and a fused norm+quant that quantizes the bf16-rounded normalized value."""
import importlib.util
import sys
from pathlib import Path

import triton
import triton.language as tl


def _twins():
    """kernels/triton/quant.py, the twins' module, loaded by path under a name of its own."""
    name = "kernel_verifier_triton_quant"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[2] / "triton" / "quant.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


_q = _twins()
QMAX, _bytes, _consts, _quantize, num_warps = _q.QMAX, _q._bytes, _q._consts, _q._quantize, _q.num_warps

BUG_TRUNCATE, BUG_HALF_AMAX, BUG_E4M3_MAX, BUG_BF16_NORMED = 1, 2, 3, 4


@triton.jit
def ptq_bug_kernel(x_ptr, y_ptr, s_ptr, N, stride_x, stride_y, floor, qmax, min_normal, sub_scale,
                   BLOCK: tl.constexpr, MANT: tl.constexpr, BIAS: tl.constexpr, BUG: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    if BUG == 2:  # amax of the first half only (a partial block reduction read before the other half arrived)
        amax = tl.maximum(tl.max(tl.where(cols < (N + 1) // 2, tl.abs(x), 0.0), 0), floor)
    else:
        amax = tl.maximum(tl.max(tl.abs(x), 0), floor)
    scale = amax / qmax
    tl.store(s_ptr + row, scale)
    if BUG == 1:  # int8 by the cast, which truncates toward zero (cvt.rzi)
        q = tl.minimum(tl.maximum(x / scale, -qmax), qmax).to(tl.int32)
    else:
        q = _quantize(x / scale, qmax, min_normal, sub_scale, MANT, BIAS)
    tl.store(y_ptr + row * stride_y + cols, q.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsq_bug_kernel(x_ptr, w_ptr, s_ptr, y_ptr, N, stride_x, stride_y, eps, qmax, min_normal, sub_scale,
                    BLOCK: tl.constexpr, MANT: tl.constexpr, BIAS: tl.constexpr, BUG: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    inv_scale = 1.0 / tl.load(s_ptr)
    rstd = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
    y = x * rstd * w
    if BUG == 4:  # the unfused pair's bf16 y, quantized: one fp8 step off wherever it crosses a boundary
        y = y.to(tl.bfloat16).to(tl.float32)
    q = _quantize(y * inv_scale, qmax, min_normal, sub_scale, MANT, BIAS)
    tl.store(y_ptr + row * stride_y + cols, q.to(y_ptr.dtype.element_ty), mask=mask)


def _launch_ptq(bug):
    def launch(inputs, outputs, params, dtypes):
        x, y, s = inputs["x"], outputs["y"], outputs["scale"]
        M, N = x.shape
        block = triton.next_power_of_2(N)
        mant, bias, mn, sub = _consts(dtypes.output)
        return ptq_bug_kernel[(M,)](x, _bytes(y, dtypes.output), s, N, x.stride(0), y.stride(0),
                                    float(params["floor"]), QMAX[dtypes.output], mn, sub, BLOCK=block, MANT=mant,
                                    BIAS=bias, BUG=bug, num_warps=num_warps(block))
    return launch


def _launch_rmsq(bug):
    def launch(inputs, outputs, params, dtypes):
        x, w, s, y = inputs["x"], inputs["w"], inputs["scale"], outputs["y"]
        M, N = x.shape
        block = triton.next_power_of_2(N)
        mant, bias, mn, sub = _consts(dtypes.output)
        qmax = 448.0 if bug == BUG_E4M3_MAX else QMAX[dtypes.output]  # e4m3's max for every fp8 output
        return rmsq_bug_kernel[(M,)](x, w, s, _bytes(y, dtypes.output), N, x.stride(0), y.stride(0),
                                     float(params["eps"]), qmax, mn, sub, BLOCK=block, MANT=mant, BIAS=bias, BUG=bug,
                                     num_warps=num_warps(block))
    return launch


launch_ptq_int8_truncate = _launch_ptq(BUG_TRUNCATE)
launch_ptq_half_amax = _launch_ptq(BUG_HALF_AMAX)
launch_rmsq_e5m2_at_448 = _launch_rmsq(BUG_E4M3_MAX)
launch_rmsq_bf16_normed = _launch_rmsq(BUG_BF16_NORMED)
