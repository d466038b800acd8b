"""Quantizing kernels, one program per row, the whole row in registers (one pass: load, reduce, scale, store):

per_token_quant: scale = max(amax, floor) / qmax, y = saturate(round(x / scale));
rmsnorm_quant:   y = saturate(round(x·rsqrt(mean(x²) + eps)·w · (1 / scale))) with a static scale[1];
rmsnorm_dynamic_quant: n = x·rsqrt(mean(x²) + eps)·w, scale = max(amax|n|, floor) / qmax, y = saturate(round(n / scale));
fused_add_rmsnorm_quant: h = x + residual (stored into residual), y as rmsnorm_quant on the float32 h.

Values clamp to ±qmax and round to nearest-even by adding and subtracting 1.5·2^23 times the format's spacing at
|v| (exact float32 arithmetic for these magnitudes); int8 then converts exactly, fp8 codes are assembled from the
rounded float32's bits and stored as bytes. Not the `.to(tl.float8e4nv)` cast: Triton 3.9's interpreter rounds it
ties-away, drops the carry into the exponent (7.98 -> 4.0) and flushes e4m3 subnormals, so the CPU check would
judge the interpreter; the compiled cast (cvt.rn.satfinite) agrees with these bits.
"""
import triton
import triton.language as tl

MAX_N = 16384
ROUND_MAGIC = tl.constexpr(12582912.0)  # 1.5·2^23: v + M - M rounds v to an integer, ties to even, for |v| <= 2^22
NAN_BITS = tl.constexpr(0x7FC00000)  # a float32 quiet NaN


@triton.jit
def _quantize(v, qmax, min_normal, sub_scale, MANT: tl.constexpr, BIAS: tl.constexpr):
    """saturate(round-to-nearest-even(v)): int8 (MANT = 0) as int8 values, fp8 as its codes (uint8)."""
    nan = v != v
    v = tl.minimum(tl.maximum(v, -qmax), qmax)
    if MANT == 0:
        code = ((v + ROUND_MAGIC) - ROUND_MAGIC).to(tl.int32)
    else:
        a = tl.abs(v)
        e = tl.maximum(((a.to(tl.int32, bitcast=True) >> 23) & 0xFF) - 127, 1 - BIAS)  # the binade; subnormals: min
        step = ((e - MANT + 127) << 23).to(tl.float32, bitcast=True)  # the format's spacing there
        c = step * ROUND_MAGIC
        r = tl.minimum((a + c) - c, qmax)
        normal = (r.to(tl.int32, bitcast=True) >> (23 - MANT)) - ((127 - BIAS) << MANT)
        sub = (r * sub_scale).to(tl.int32)  # a subnormal's code: r / 2^(1 - BIAS - MANT), exact
        code = tl.where(r >= min_normal, normal, sub) | tl.where(v < 0, 128, 0)
        code = tl.where(nan, 0x7F, code)  # NaN stays NaN (0x7F is NaN in e4m3fn and e5m2)
    return code  # int32: the store converts it to the output's int8 / uint8 (exact: it fits)


@triton.jit
def per_token_quant_kernel(x_ptr, y_ptr, s_ptr, N, stride_x, stride_y, floor, qmax, min_normal, sub_scale,
                           BLOCK: tl.constexpr,
                           MANT: tl.constexpr, BIAS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), 0), floor)
    nans = tl.sum((x != x).to(tl.int32), 0)
    nan = tl.full([], NAN_BITS, tl.int32).to(tl.float32, bitcast=True)
    scale = tl.where(nans > 0, nan, amax / qmax)  # a NaN anywhere in the row: torch's amax is NaN
    tl.store(s_ptr + row, scale)
    q = _quantize(x / scale, qmax, min_normal, sub_scale, MANT, BIAS)
    tl.store(y_ptr + row * stride_y + cols, q.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_quant_kernel(x_ptr, w_ptr, s_ptr, y_ptr, N, stride_x, stride_y, eps, qmax, min_normal, sub_scale,
                         BLOCK: tl.constexpr,
                         MANT: tl.constexpr, BIAS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    inv_scale = 1.0 / tl.load(s_ptr)
    rstd = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
    q = _quantize(x * rstd * w * inv_scale, qmax, min_normal, sub_scale, MANT, BIAS)
    tl.store(y_ptr + row * stride_y + cols, q.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_dynamic_quant_kernel(x_ptr, w_ptr, y_ptr, s_ptr, N, stride_x, stride_y, eps, floor, qmax, min_normal,
                                 sub_scale, BLOCK: tl.constexpr, MANT: tl.constexpr, BIAS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    n = x * tl.rsqrt(tl.sum(x * x, 0) / N + eps) * w
    nans = tl.sum((n != n).to(tl.int32), 0)
    nan = tl.full([], NAN_BITS, tl.int32).to(tl.float32, bitcast=True)
    scale = tl.where(nans > 0, nan, tl.maximum(tl.max(tl.abs(n), 0), floor) / qmax)
    tl.store(s_ptr + row, scale)
    q = _quantize(n / scale, qmax, min_normal, sub_scale, MANT, BIAS)
    tl.store(y_ptr + row * stride_y + cols, q.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def fused_add_rmsnorm_quant_kernel(x_ptr, r_ptr, w_ptr, s_ptr, y_ptr, N, stride_x, stride_r, stride_y, eps, qmax,
                                   min_normal, sub_scale, BLOCK: tl.constexpr, MANT: tl.constexpr,
                                   BIAS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    h = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32) \
        + tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(r_ptr + row * stride_r + cols, h.to(r_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    inv_scale = 1.0 / tl.load(s_ptr)
    rstd = tl.rsqrt(tl.sum(h * h, 0) / N + eps)
    q = _quantize(h * rstd * w * inv_scale, qmax, min_normal, sub_scale, MANT, BIAS)
    tl.store(y_ptr + row * stride_y + cols, q.to(y_ptr.dtype.element_ty), mask=mask)


QMAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "int8": 127.0}
FORMAT = {"float8_e4m3fn": (3, 7), "float8_e5m2": (2, 15), "int8": (0, 0)}  # (mantissa bits, exponent bias)


def _consts(dtype):
    """(mantissa bits, bias, smallest normal, 1 / smallest subnormal) of the output format."""
    mant, bias = FORMAT[dtype]
    return mant, bias, 2.0 ** (1 - bias), 2.0 ** (bias - 1 + mant)


def _bytes(y, dtype):
    """The output as the kernel stores it: fp8 as its bytes (codes), int8 as is."""
    import torch

    return y if dtype == "int8" else y.view(torch.uint8)


def num_warps(block: int) -> int:
    return 32 if block > 8192 else max(1, min(16, block // 256))


def _common(x, y, name):
    M, N = x.shape
    if N > MAX_N:
        raise ValueError(f"{name}: N={N} > {MAX_N} does not fit one block's registers")
    return M, N, triton.next_power_of_2(N)


def launch_per_token_quant(inputs, outputs, params, dtypes):
    x, y, s = inputs["x"], outputs["y"], outputs["scale"]
    M, N, block = _common(x, y, "per_token_quant")
    qmax = float(params["qmax"]) if params.get("qmax") is not None else QMAX[dtypes.output]
    mant, bias, mn, sub = _consts(dtypes.output)
    return per_token_quant_kernel[(M,)](x, _bytes(y, dtypes.output), s, N, x.stride(0), y.stride(0),
                                        float(params["floor"]), qmax, mn, sub, BLOCK=block, MANT=mant, BIAS=bias,
                                        num_warps=num_warps(block))


def launch_rmsnorm_quant(inputs, outputs, params, dtypes):
    x, w, s, y = inputs["x"], inputs["w"], inputs["scale"], outputs["y"]
    M, N, block = _common(x, y, "rmsnorm_quant")
    mant, bias, mn, sub = _consts(dtypes.output)
    return rmsnorm_quant_kernel[(M,)](x, w, s, _bytes(y, dtypes.output), N, x.stride(0), y.stride(0),
                                      float(params["eps"]), QMAX[dtypes.output], mn, sub, BLOCK=block, MANT=mant, BIAS=bias,
                                      num_warps=num_warps(block))


def launch_rmsnorm_dynamic_quant(inputs, outputs, params, dtypes):
    x, w, y, s = inputs["x"], inputs["w"], outputs["y"], outputs["scale"]
    M, N, block = _common(x, y, "rmsnorm_dynamic_quant")
    qmax = float(params["qmax"]) if params.get("qmax") is not None else QMAX[dtypes.output]
    mant, bias, mn, sub = _consts(dtypes.output)
    return rmsnorm_dynamic_quant_kernel[(M,)](x, w, _bytes(y, dtypes.output), s, N, x.stride(0), y.stride(0),
                                              float(params["eps"]), float(params["floor"]), qmax, mn, sub,
                                              BLOCK=block, MANT=mant, BIAS=bias, num_warps=num_warps(block))


def launch_fused_add_rmsnorm_quant(inputs, outputs, params, dtypes):
    x, r, w, s, y = inputs["x"], outputs["residual"], inputs["w"], inputs["scale"], outputs["y"]
    M, N, block = _common(x, y, "fused_add_rmsnorm_quant")
    mant, bias, mn, sub = _consts(dtypes.output)
    return fused_add_rmsnorm_quant_kernel[(M,)](x, r, w, s, _bytes(y, dtypes.output), N, x.stride(0), r.stride(0),
                                                y.stride(0), float(params["eps"]), QMAX[dtypes.output], mn, sub,
                                                BLOCK=block, MANT=mant, BIAS=bias, num_warps=num_warps(block))
