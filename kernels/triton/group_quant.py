"""Per-token-group quantization (op per_token_group_quant): one program per row, GPB groups of GROUP consecutive
elements at a time (a [GPB, GROUP] tile); each group's scale = max(amax of the group, floor) / qmax (or that rounded
up to a power of two, UE8M0), y = saturate(round(x / scale)) through quant.py's exact rounding (_quantize:
nearest-even, fp8 codes assembled from the rounded float32, so the interpreter needs no replay)."""
import triton
import triton.language as tl

from quant import QMAX, _consts, _quantize

NAN_BITS = tl.constexpr(0x7FC00000)  # a float32 quiet NaN


@triton.jit
def group_quant_kernel(x_ptr, y_ptr, s_ptr, groups, stride_x, stride_y, stride_s, floor, qmax, min_normal, sub_scale,
                       GROUP: tl.constexpr, BLOCK: tl.constexpr, GPB: tl.constexpr, UE8M0: tl.constexpr,
                       MANT: tl.constexpr, BIAS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    gi = tl.arange(0, GPB)
    cols = tl.arange(0, BLOCK)
    nan = tl.full([GPB], NAN_BITS, tl.int32).to(tl.float32, bitcast=True)
    for g0 in range(0, groups, GPB):  # GPB groups at a time, a [GPB, BLOCK] tile
        gs = g0 + gi
        gmask = gs < groups
        mask = gmask[:, None] & (cols[None, :] < GROUP)
        offs = gs[:, None] * GROUP + cols[None, :]
        x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
        scale = tl.maximum(tl.max(tl.abs(x), 1), floor) / qmax
        if UE8M0:  # 2^ceil(log2(scale)) from the float32 bits: exact, no approximate log2
            bits = scale.to(tl.int32, bitcast=True)
            up = ((bits & 0x7FFFFF) != 0).to(tl.int32)
            scale = (((bits >> 23) + up) << 23).to(tl.float32, bitcast=True)
        nans = tl.sum((x != x).to(tl.int32), 1)
        scale = tl.where(nans > 0, nan, scale)  # a NaN in the group: its scale is NaN (torch's amax)
        tl.store(s_ptr + row * stride_s + gs, scale, mask=gmask)
        q = _quantize(x / scale[:, None], qmax, min_normal, sub_scale, MANT, BIAS)
        tl.store(y_ptr + row * stride_y + offs, q.to(y_ptr.dtype.element_ty), mask=mask)


def launch_group_quant(inputs, outputs, params, dtypes):
    import torch

    x, y, s = inputs["x"], outputs["y"], outputs["scale"]
    M, N = x.shape
    G = int(params["group_size"])
    qmax = float(params["qmax"]) if params.get("qmax") is not None else QMAX[dtypes.output]
    mant, bias, mn, sub = _consts(dtypes.output)
    yb = y if dtypes.output == "int8" else y.view(torch.uint8)
    block = triton.next_power_of_2(G)
    gpb = max(1, min(triton.next_power_of_2(N // G), 4096 // block))  # a tile of at most 4096 elements
    group_quant_kernel[(M,)](x, yb, s, N // G, x.stride(0), y.stride(0), s.stride(0), float(params["floor"]), qmax,
                             mn, sub, GROUP=G, BLOCK=block, GPB=gpb, UE8M0=bool(params["ue8m0"]), MANT=mant,
                             BIAS=bias, num_warps=max(1, min(8, block * gpb // 512)))
