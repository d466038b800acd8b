"""Quantized outputs: per_token_quant, rmsnorm_quant, rmsnorm_dynamic_quant and fused_add_rmsnorm_quant (docs/specs.md,
"Quantized outputs").

per_token_quant: x[M,N] -> y[M,N] quantized, scale[M] float32: scale = max(amax(|x_row|), floor) / qmax (the amax
first capped at scale_ub where a kernel declares one, as vLLM's dynamic per-token fp8 quantizers may),
y = saturate(round(x / scale)) (vLLM's dynamic per-token fp8 / int8 quantization; qmax is the output format's max
unless the kernel declares a smaller one, as ROCm's fnuz 224 kernels would). ``scale_form="inverse"``: the scale
output holds the inverse, s = qmax / max(amax, floor), and y = saturate(round(x · s)) (CTranslate2's
quantize_kernel, which writes 1 for an all-zero row: any finite s > 0 is taken there, y must be 0).

rmsnorm_quant: x[M,N], w[N], scale[1] float32 (static) -> y[M,N] quantized:
y = saturate(round(rmsnorm(x, w) / scale)) (vLLM's rms_norm_static_fp8_quant). A kernel that stores x·rsqrt in the
input dtype before the weight (vLLM does, in bf16 / f16, and multiplies by the weight in that dtype too) declares
``round_normed=True``.

rmsnorm_dynamic_quant: x[M,N], w[N] -> y[M,N] quantized, scale[M] float32: n = rmsnorm(x, w), scale =
max(amax(|n|), floor) / qmax, y = saturate(round(n / scale)) (vLLM's rms_norm_dynamic_per_token_quant).

fused_add_rmsnorm_quant: x[M,N], residual[M,N] (updated in place), w[N], scale[1] -> y[M,N] quantized: h = x +
residual is stored into residual (as fused_add_rmsnorm), y = saturate(round(rmsnorm(h, w) / scale)) (vLLM's
fused_add_rms_norm_static_fp8_quant); y may normalize the stored (rounded) h or the float32 sum.

All compare y in the quantized domain (verifier.judge.quantized): t = value / scale exactly, its budget E in the
units of t, one step of slack only where [t - E, t + E] holds a rounding boundary. ``rounding``: 'nearest_even' (the
fp8 cvt.rn, and int8's __float2int_rn / torch.round), 'half_away' (int8 kernels using roundf / llrintf-free
paths) or 'toward_zero' (a plain cast: static_cast<int8_t>, torch's .to(torch.int8), CTranslate2's default
round_before_cast=false), declared by the kernel.
"""
from __future__ import annotations

import numpy as np

from verifier.errors import SpecError
from verifier.numerics.errmodel import gamma
from verifier.ops.model import Op, OpCase, Quantized, Tensor, may_round

QUANT_OUT = ("float8_e4m3fn", "float8_e5m2", "int8")
_F32_TINY = float(np.finfo(np.float32).tiny)
_F64_TINY = float(np.finfo(np.float64).smallest_subnormal)


def qmax_of(params: dict, dtype: str) -> float:
    """The kernel's qmax: the param when declared, else the output format's max."""
    from verifier.numerics.quantized import fmt

    return float(params["qmax"]) if params.get("qmax") is not None else fmt(dtype).qmax


# --------------------------------------------------------------------------- per_token_quant

SCALE_FORMS = ("scale", "inverse")  # what a dynamic scale output holds: max(amax, floor) / qmax, or its inverse


def inverse(p) -> bool:
    """Whether the kernel declares its scale output the inverse, qmax / max(amax, floor) (``scale_form``)."""
    return p.get("scale_form", "scale") == "inverse"


def check_bounds(p) -> None:
    """floor a number >= 0 and scale_ub None or a number > 0: a scale_ub of 0 with floor 0 would make every scale 0,
    which the judge takes as a zero row's (any finite y), so it is refused rather than judged. scale_form one of
    SCALE_FORMS."""
    form = p.get("scale_form", "scale")
    if form not in SCALE_FORMS:
        raise SpecError(f"param scale_form={form!r} is not one of {', '.join(SCALE_FORMS)}",
                        fix="scale_form='scale' for a scale output max(amax, floor) / qmax (y = x / scale), "
                            "'inverse' for qmax / max(amax, floor) (y = x · scale)")
    floor, ub = p.get("floor", 0.0), p.get("scale_ub")
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not floor >= 0 or floor == float("inf"):
        raise SpecError(f"param floor={floor!r} is not a finite number >= 0",
                        fix="declare the smallest amax the kernel uses, e.g. floor=1e-10 (0 for a kernel with none)")
    if ub is not None and (isinstance(ub, bool) or not isinstance(ub, (int, float)) or not ub > 0):
        raise SpecError(f"param scale_ub={ub!r} is not a number > 0",
                        fix="declare the kernel's cap on the amax, e.g. scale_ub=1200.0, or None for none")


def _row_amax(v, p):
    """max(min(amax of the rows' |v|, scale_ub), floor): scale_ub (None: none) caps the amax first (vLLM's dynamic
    per-token fp8 quantizers take an optional scale_ub; values past it saturate)."""
    check_bounds(p)
    amax = v.abs().amax(-1)
    if p.get("scale_ub") is not None:
        amax = amax.clamp(max=p["scale_ub"])
    return amax.clamp(min=p["floor"])


def row_scale(v, p):
    """max(min(amax of the rows' |v|, scale_ub), floor) / qmax."""
    return _row_amax(v, p) / p["qmax"]


def nonzero(scale):
    """The scale y divides by: a zero scale (floor 0, declared by a kernel without one, on a zero row) gives t = 0,
    not 0/0, so the reference is a number there (the judge then takes any finite y: y·0 = 0 dequantizes exactly;
    verifier.judge.quantized.compare_op). Only a zero changes: clamping at the smallest positive double."""
    return scale.clamp(min=_F64_TINY)


def ptq_reference(i, p):
    x = i["x"]
    if inverse(p):  # a zero row without a floor: s = qmax / 0 = inf, and t = 0 there, not 0·inf
        s = p["qmax"] / _row_amax(x, p)
        return {"y": x * s.clamp(max=float(np.finfo(np.float64).max))[:, None], "scale": s}
    scale = row_scale(x, p)
    return {"y": x / nonzero(scale)[:, None], "scale": scale}


def scale_units(c) -> float:
    """max(amax, floor) / qmax: amax is exact (abs, max); the float32 floor is rounded once (where it wins); the
    division costs the math mode's div units, or amax·fl(1/qmax) two roundings; input conversion c_in."""
    return max(c.intr.div, 2.0) + 1.0 + c.c_in


def inverse_units(c) -> float:
    """qmax / max(amax, floor) (scale_form='inverse'): one division (div units), qmax·fl(1/amax) (div + 1),
    1 / fl(amax / qmax) (two divisions) or 1 / (amax·fl(1/qmax)) (div + 2): the largest, with the floor's rounding
    and the input conversion as for the scale."""
    return max(2.0 * c.intr.div, c.intr.div + 2.0) + 1.0 + c.c_in


def y_units(c) -> float:
    """t = x / s from the kernel's scale s: x / s (div units), x·fl(1/s) (div + 1), or x·fl(qmax / amax), whose
    factor is 1/s within the scale's own units plus its one-ULP base (2u) and a division: the largest of them."""
    return scale_units(c) + 2.0 + c.intr.div + 1.0 + c.c_in


def inverse_y_units(c) -> float:
    """t = x·s from the kernel's inverse s: x·s (one product), or x·s' / x / fl(amax / qmax) with a factor of its own
    computed apart, within the inverse's own units plus its one-ULP base (2u), and a product or a division."""
    return inverse_units(c) + 2.0 + max(c.intr.div, 1.0) + c.c_in


def k_scale(x, s, p, c, xs):
    return gamma(inverse_units(c) if inverse(p) else scale_units(c), c.u) * np.abs(s) + c.eta


def k_ptq_y(x, t, p, c, xs):
    return gamma(inverse_y_units(c) if inverse(p) else y_units(c), c.u) * np.abs(t) + c.eta


def ptq_rescale(xs, p, s, c):
    """t and its bound under the kernel's scale s: one per row ([M]) or one per group of G consecutive elements of a
    row ([M, N/G], per_token_group_quant). Where s is a power of two with s·qmax exactly its row's (group's)
    max(amax, floor), x/s a float32 normal (or 0) and x·qmax a float32, every form the kernel may compute (x/s,
    x·(1/s), x·(qmax/amax), (x·qmax)/amax) is exact under correctly rounded division: E = 0, so an exact tie must
    round as declared. scale_form='inverse': s is the inverse, t = x·s, exact under the same conditions with s·amax
    exactly qmax."""
    x = xs["x"]
    M, N = x.shape
    s = np.asarray(s, dtype=np.float64).reshape(M, -1)
    xg = x.reshape(M, s.shape[1], -1)  # [M, groups, G]
    inv = inverse(p)
    with np.errstate(invalid="ignore", divide="ignore"):  # a zero scale's rows: t = 0 (verifier.judge.quantized)
        t = xg * s[..., None] if inv else xg / s[..., None]
    E = gamma(inverse_y_units(c) if inv else y_units(c), c.u) * np.abs(t) + c.eta
    amax = np.abs(xg).max(axis=-1)
    if p.get("scale_ub") is not None:
        amax = np.minimum(amax, float(np.float32(p["scale_ub"])))
    amax = np.maximum(amax, float(np.float32(p["floor"])))
    pow2 = np.frexp(s)[0] == 0.5
    with np.errstate(invalid="ignore", over="ignore"):
        exact_scale = pow2 & ((s * amax == float(p["qmax"])) if inv else (s * float(p["qmax"]) == amax))
    with np.errstate(over="ignore", invalid="ignore"):
        t32 = t.astype(np.float32).astype(np.float64)
        xq = xg * float(p["qmax"])
        xq_exact = xq.astype(np.float32).astype(np.float64) == xq  # (x·qmax) / amax is exact too
    exact = exact_scale[..., None] & (t32 == t) & ((np.abs(t) >= _F32_TINY) | (t == 0)) & xq_exact & (c.c_in == 0) \
        & (c.intr.div <= 1.0)  # a correctly rounded division: exact where the quotient is representable
    return t.reshape(M, N), np.where(exact, 0.0, E).reshape(M, N)


def _rows_of(values):
    """A sampler whose rows cycle through ``values`` (a list of 1-D patterns, tiled over N)."""
    def sampler(rng):
        def draw(shape, dtype):
            M, N = shape
            out = np.empty(shape)
            for r in range(M):
                v = np.asarray(values[r % len(values)], dtype=np.float64)
                out[r] = np.resize(v, N) if v.size != N else v
            return out
        return draw
    return sampler


def _ties_int8(rng):
    # amax = 127·2^k: scale = 2^k exactly, x/scale exact, and x = (j + 0.5)·2^k lands on an exact int8 tie
    def draw(shape, dtype):
        M, N = shape
        k = rng.integers(-3, 3, size=M).astype(np.float64)
        j = rng.integers(-126, 126, size=(M, N)).astype(np.float64) + 0.5
        out = j * 2.0 ** k[:, None]
        out[:, 0] = 127.0 * 2.0 ** k
        return out
    return draw


def _ties_fp8(rng):
    # amax = 448·2^k (e4m3's max): x/scale = midpoints between neighbouring e4m3 values in [1, 2): 1 + (2j+1)/16
    def draw(shape, dtype):
        M, N = shape
        k = rng.integers(-3, 3, size=M).astype(np.float64)
        j = rng.integers(0, 8, size=(M, N))
        sign = np.where(rng.random((M, N)) < 0.5, -1.0, 1.0)
        out = sign * (1.0 + (2 * j + 1) / 16.0) * 2.0 ** k[:, None]
        out[:, 0] = 448.0 * 2.0 ** k
        return out
    return draw


def _mixed_rows(rng):
    # rows of very different magnitudes: huge (1e30: bf16 / f32 only), subnormal-sized, zero, constant
    def draw(shape, dtype):
        M, N = shape
        out = rng.standard_normal(shape)
        mags = [1.0, 1e-3, 1e3, 0.0, 7.0]
        for r in range(M):
            out[r] *= mags[r % len(mags)]
            if r % len(mags) == 4:
                out[r] = -3.25
        return out
    return draw


def _wide(dt):
    return dt in ("float32", "bfloat16")


PTQ_CASES = (
    OpCase("zero_rows", "a row of zeros: amax = 0, scale = floor / qmax, y = 0 (no 0/0)", 4, 256,
           _rows_of([np.zeros(1), np.ones(1), np.zeros(1), -np.arange(1.0, 9.0)]), quick=True),
    OpCase("subnormal_amax", "rows whose amax is a float32 subnormal (below floor): scale = floor / qmax", 3, 128,
           _rows_of([np.array([1e-40, -3e-41, 0.0]), np.array([2e-39]), np.array([1.0, 0.5])]),
           dtype_ok=lambda dt: dt == "float32"),
    OpCase("huge_amax", "rows with amax 1e30 (scale 1e27 and more): x / scale still reaches ±qmax", 3, 128,
           _rows_of([np.array([1e30, -2.5e29, 3.0]), np.array([-1e30]), np.array([1.0, -1.0])]), dtype_ok=_wide),
    OpCase("constant_row", "a row of one value: every element is ±qmax exactly", 4, 192,
           _rows_of([np.array([3.0]), np.array([-0.0625]), np.array([1.7]), np.array([-1e4])]), quick=True),
    OpCase("int8_ties", "x / scale exactly at int8 ties (amax 127·2^k): half-even and half-away differ", 8, 256,
           _ties_int8, dtype_ok=_wide, quick=True),
    OpCase("fp8_ties", "x / scale exactly midway between e4m3 neighbours (amax 448·2^k)", 8, 256, _ties_fp8,
           dtype_ok=_wide),
    OpCase("mixed_magnitudes", "rows 1e-3 to 1e3 apart, a zero row and a constant row in one batch", 10, 512,
           _mixed_rows, quick=True),
)


def ptq_bytes(M, N, dt, p):
    from verifier import dtypes as _dt

    return M * N * (_dt.numpy_dtype(dt.input).itemsize + 1) + 4 * M


PER_TOKEN_QUANT = Op(
    "per_token_quant", inputs={"x": "MxN"}, outputs={"y": "MxN", "scale": Tensor("M", dtype="float32")},
    params={"floor": 1e-10, "qmax": None, "rounding": "nearest_even", "scale_ub": None, "scale_form": "scale"},
    reference=ptq_reference, recipe={"y": (0.0, "ptq_y"), "scale": (1.0, "ptq_scale")},
    kappas={"ptq_y": k_ptq_y, "ptq_scale": k_scale}, out_dtypes=QUANT_OUT, float64=False,
    quantized={"y": Quantized(scale="scale", rescale=ptq_rescale)}, cases=PTQ_CASES, bytes_moved=ptq_bytes,
    description="dynamic per-row quantization: scale = max(amax, floor) / qmax, y = saturate(round(x / scale))",
)


# --------------------------------------------------------------------------- rmsnorm_quant

def rmsq_reference(i, p):
    x = i["x"]
    r = torch_rsqrt((x * x).mean(-1, keepdim=True) + p["eps"])
    # y·(1/scale): the reciprocal and the product, two roundings, cover a kernel dividing by scale (one)
    return {"y": weighted(x * r, i["w"], p) * (1.0 / i["scale"])}


def weighted(normed, w, p):
    """normed·(offset + w). Declared ``round_normed``: x·rsqrt and its product with the weight may each be stored
    in the input dtype: vLLM's fused kernels compute ``static_cast<scalar_t>(x * rms) * weight[i]``, a bf16 / f16
    product of the rounded x·rsqrt (two roundings), F.rms_norm in bf16 rounds its y once, a kernel keeping the
    product in float32 rounds x·rsqrt only: the budget holds each."""
    if not p["round_normed"]:
        return normed * (p["offset"] + w)
    return may_round(may_round(normed, "input") * (p["offset"] + w), "input")


def torch_rsqrt(v):
    import torch

    return torch.rsqrt(v)


def _static_scale(rng, x, params, policy):
    # a calibrated static scale: the batch's 99th percentile of |x|/rms(x), mapped to 100, so ordinary values reach
    # the formats' upper range and outliers (the beyond_saturation case) pass 448 and 127
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 2 and x.shape[0] > 1 and x.strides[0] == 0:  # rows repeated by a broadcast view (a large case's
        x = x[:1]  # stand-in x): one row's statistics, not 2^31 elements of float64 arithmetic (50 GB)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rms = np.sqrt(np.mean(x * x, axis=1, keepdims=True) + params["eps"])
        r = (np.abs(x) / rms)[np.isfinite(x)]
    peak = float(np.percentile(r, 99)) if r.size else 1.0
    return np.array([max(peak if np.isfinite(peak) and peak > 0 else 1.0, 1e-3) / 100.0])


def _beyond(rng):
    # rows whose normalized values reach 30x the others: with the static scale they pass e4m3's 448 and int8's 127
    def draw(shape, dtype):
        out = rng.standard_normal(shape)
        out[:, :4] = 60.0
        return out
    return draw


RMSQ_CASES = (
    OpCase("beyond_saturation", "normalized values past the format's max under the static scale: y = ±qmax", 4, 1024,
           _beyond, quick=True),
    OpCase("constant_row", "a row of one value: every normalized element is ±w exactly", 4, 256,
           _rows_of([np.array([3.0]), np.array([-0.0625]), np.array([1.0])]), quick=True),
)


def rmsq_bytes(M, N, dt, p):
    from verifier import dtypes as _dt

    return M * N * (_dt.numpy_dtype(dt.input).itemsize + 1) + N * _dt.numpy_dtype(dt.weight or dt.input).itemsize + 4


RMSNORM_QUANT = Op(
    "rmsnorm_quant", inputs={"x": "MxN", "w": Tensor("N", "weight"), "scale": Tensor("1", "scale", make=_static_scale)},
    outputs={"y": "MxN"}, params={"eps": 1e-6, "offset": 0.0, "round_normed": False, "rounding": "nearest_even"},
    reference=rmsq_reference, out_dtypes=QUANT_OUT, float64=False, quantized={"y": Quantized(scale="scale")},
    cases=RMSQ_CASES, bytes_moved=rmsq_bytes,
    description="RMSNorm with a static scale: y = saturate(round(x·rsqrt(mean(x²) + eps)·(offset + w) / scale))",
)


# --------------------------------------------------------------------------- rmsnorm_dynamic_quant

def _normed(i, p):
    """x·rsqrt(mean(x²) + eps)·(offset + w), the stored intermediate declared by round_normed."""
    x = i["x"]
    return weighted(x * torch_rsqrt((x * x).mean(-1, keepdim=True) + p["eps"]), i["w"], p)


def rdq_reference(i, p):
    n = _normed(i, p)
    scale = row_scale(n, p)
    return {"y": n / nonzero(scale)[:, None], "scale": scale}


def rdq_rescale(xs, p, s, c):
    """t = n / s under the kernel's scale: n's derived error bound (the same rules as the budget, through
    verifier.ops.derived) over s, plus the kernel's own forming of n / s as per_token_quant's (y_units)."""
    from verifier import dtypes as _dt
    from verifier.ops.derived import Rounding, propagate

    io = {"input": (_dt.unit_roundoff(c.inp), float(_dt.finfo(c.inp).smallest_subnormal))} \
        if _dt.is_float(c.inp) else {}
    got = propagate(lambda i, pp: {"n": _normed(i, pp)}, xs, p, Rounding(c.u, c.eta, c.intr, c.c_in, c.online, io))
    n, En = got["n"]
    s = np.asarray(s, dtype=np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):  # a zero scale's rows: t = 0 (verifier.judge.quantized)
        t = n / s
        return t, En / s + gamma(y_units(c), c.u) * np.abs(t) + c.eta


RMSNORM_DYNAMIC_QUANT = Op(
    "rmsnorm_dynamic_quant", inputs={"x": "MxN", "w": Tensor("N", "weight")},
    outputs={"y": "MxN", "scale": Tensor("M", dtype="float32")},
    params={"eps": 1e-6, "offset": 0.0, "floor": 1e-10, "qmax": None, "scale_ub": None, "round_normed": False,
            "rounding": "nearest_even"},
    reference=rdq_reference, out_dtypes=QUANT_OUT, float64=False,
    quantized={"y": Quantized(scale="scale", rescale=rdq_rescale)},
    cases=(PTQ_CASES[0], PTQ_CASES[3], PTQ_CASES[6]), bytes_moved=ptq_bytes,
    description="RMSNorm then dynamic per-row quantization: scale = max(amax(|n|), floor) / qmax, "
                "y = saturate(round(n / scale))",
)


# --------------------------------------------------------------------------- fused_add_rmsnorm_quant

def farq_reference(i, p):
    h = i["x"] + i["residual"]
    hs = may_round(h, "input")  # y normalizes the stored residual or the float32 sum: either
    normed = hs * torch_rsqrt((hs * hs).mean(-1, keepdim=True) + p["eps"])
    return {"y": weighted(normed, i["w"], p) * (1.0 / i["scale"]), "residual": h}


def farq_bytes(M, N, dt, p):
    from verifier import dtypes as _dt

    io = _dt.numpy_dtype(dt.input).itemsize
    return M * N * (3 * io + 1) + N * _dt.numpy_dtype(dt.weight or dt.input).itemsize + 4


FUSED_ADD_RMSNORM_QUANT = Op(
    "fused_add_rmsnorm_quant",
    inputs={"x": "MxN", "residual": "MxN", "w": Tensor("N", "weight"),
            "scale": Tensor("1", "scale", make=_static_scale)},
    outputs={"y": "MxN", "residual": "MxN"}, inouts=("residual",),
    params={"eps": 1e-6, "offset": 0.0, "round_normed": False, "rounding": "nearest_even"},
    reference=farq_reference, out_dtypes=QUANT_OUT, float64=False, quantized={"y": Quantized(scale="scale")},
    cases=RMSQ_CASES, bytes_moved=farq_bytes,
    description="residual += x (stored in its dtype), y = saturate(round(rmsnorm(residual, w) / scale))",
)
